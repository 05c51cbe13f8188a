-- Sharing operations (docs/API.md §3): user_for_contact, discover_user,
-- find_share, manages_share, managed_participant, put_participant, remove_participant,
-- save_share, keep_share_token, delete_share, forget_share_token, leave_shares, caller_participant_id, share_view, share_root_preview,
-- accept_share.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent. Supersedes the
-- definitions in archive/0006 and 0007.
--
-- Sharing operations (docs/API.md §3: saveShare, setParticipant,
-- removeParticipant, deleteShare, share, shareMetadata, acceptShare,
-- leaveShare, discoverUser). Functions that manage a share run as the
-- caller (SECURITY INVOKER), so row-level security decides who may do what
-- exactly as the permission table says; only the three things a caller
-- cannot do through their own rows are SECURITY DEFINER: finding a user by
-- contact, reading a share's metadata by its URL, and accepting by URL.
--
-- SQLSTATEs: CN002 ALREADY_SHARED, CN003 LIMIT_EXCEEDED, CN004
-- INVALID_ARGUMENTS, CN005 PERMISSION_FAILURE, CN006 UNKNOWN_ITEM.

SET LOCAL ROLE canopy_owner;

-- The account a contact names (a userRecordName, else an email, else a
-- phone), or NULL. Only for a signed-in caller; never user 0, the public
-- zone's reserved owner (migrations/0038).
CREATE OR REPLACE FUNCTION canopy.user_for_contact(p_record_name text, p_email text, p_phone text) RETURNS bigint
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT u.id FROM canopy.users u
     WHERE canopy.current_user_id() IS NOT NULL AND u.id <> 0
       AND CASE WHEN p_record_name IS NOT NULL THEN u.record_name = p_record_name
                WHEN p_email IS NOT NULL THEN u.email = lower(p_email)
                ELSE u.phone = p_phone END
     ORDER BY u.id LIMIT 1
$$;

-- discoverUser: the user with that email and/or phone (both must match
-- when both are given). Shows the contact the caller already knows, never
-- the other one.
-- (With display_name since issue 37: `discoverUser { name }` reads it, as
-- every User does; the version without it is dropped.)
DROP FUNCTION IF EXISTS canopy.discover_user(text, text);
CREATE FUNCTION canopy.discover_user(p_email text, p_phone text)
    RETURNS TABLE (record_name text, name text, display_name text, email text, phone text)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT u.record_name, u.name, u.display_name,
           CASE WHEN p_email IS NOT NULL THEN u.email END,
           CASE WHEN p_phone IS NOT NULL THEN u.phone END
      FROM canopy.users u
     WHERE canopy.current_user_id() IS NOT NULL AND u.id <> 0
       AND (p_email IS NOT NULL OR p_phone IS NOT NULL)
       AND (p_email IS NULL OR u.email = lower(p_email))
       AND (p_phone IS NULL OR u.phone = p_phone)
     ORDER BY u.id LIMIT 1
$$;

-- users/lookup/id of Web Services (issue 66): the person with this user
-- record name, among those the caller may see (users_select: themselves,
-- the owners of zones shared with them, the participants of shares they
-- manage), so a record name seen on a public record is not a way to learn
-- who its author is. Not a definer: row-level security decides. It shows
-- no contact: the record name and names only. Nobody signed in, or no such
-- person the caller may see: no row.
CREATE OR REPLACE FUNCTION canopy.discover_user_by_record_name(p_record_name text)
    RETURNS TABLE (record_name text, name text, display_name text)
    LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
AS $$
    SELECT u.record_name, u.name, u.display_name
      FROM canopy.users u
     WHERE canopy.current_user_id() IS NOT NULL
       AND u.record_name = p_record_name
$$;

-- The share of a zone (p_root_name NULL) or rooted at a record of it, as
-- the caller sees it; NULL when there is none. An unknown root is CN006.
-- p_owner_id is the zone's owner (the planner's `zone` CTE has it): every
-- table is read by it, which on Citus is the owner's one shard (DECISIONS
-- 170). Without it (a gateway older than 170), the zone's row says.
-- Supersedes the 2-argument version, dropped here.
DROP FUNCTION IF EXISTS canopy.find_share(bigint, text);
CREATE OR REPLACE FUNCTION canopy.find_share(p_zone_id bigint, p_root_name text, p_owner_id bigint DEFAULT NULL) RETURNS bigint
    LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    owner bigint := p_owner_id;
    root_id bigint;
    found_id bigint;
BEGIN
    IF owner IS NULL THEN
        SELECT owner_id INTO owner FROM canopy.zones WHERE id = p_zone_id;
    END IF;
    IF p_root_name IS NOT NULL THEN
        SELECT id INTO root_id FROM canopy.records WHERE owner_id = owner AND zone_id = p_zone_id AND record_name = p_root_name;
        IF root_id IS NULL THEN
            RAISE EXCEPTION 'record % does not exist in the zone', p_root_name USING ERRCODE = 'CN006';
        END IF;
        SELECT id INTO found_id FROM canopy.shares WHERE owner_id = owner AND root_record_id = root_id;
    ELSE
        SELECT id INTO found_id FROM canopy.shares WHERE owner_id = owner AND zone_id = p_zone_id AND root_record_id IS NULL;
    END IF;
    RETURN found_id;
END
$$;

-- Whether the caller manages the share p_owner_id's p_share_id: its owner
-- (their own share, as they see it) or an accepted administrator
-- (canopy.caller_in_share). Both on the owner's shard on Citus
-- (DECISIONS 170); before it, owned_share_ids() and admin_share_ids()
-- gathered every share of the caller's.
CREATE OR REPLACE FUNCTION canopy.manages_share(p_owner_id bigint, p_share_id bigint) RETURNS boolean
    LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_owner_id IS NULL OR p_share_id IS NULL THEN
        RETURN false;
    END IF;
    IF p_owner_id = canopy.current_user_id() AND p_owner_id <> 0 THEN
        RETURN EXISTS (SELECT 1 FROM canopy.shares s WHERE s.owner_id = p_owner_id AND s.id = p_share_id);
    END IF;
    RETURN canopy.caller_in_share(p_owner_id, p_share_id, 'admin');
END
$$;

-- The participant a contact names in a share the caller manages (its
-- owner or an accepted administrator; anyone else is CN005), as the caller
-- sees it. When there is none: a row whose id is NULL and whose user_id is
-- the contact's account, if it has one. p_owner_id is the share's owner
-- (DECISIONS 170: every table read by it; NULL, from an older gateway:
-- the share's row says). Supersedes the 4-argument version, dropped here.
DROP FUNCTION IF EXISTS canopy.managed_participant(bigint, text, text, text);
CREATE OR REPLACE FUNCTION canopy.managed_participant(
    p_share_id bigint, p_user_record_name text, p_email text, p_phone text, p_owner_id bigint DEFAULT NULL
) RETURNS canopy.participants
    LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    owner bigint := p_owner_id;
    account bigint;
    found canopy.participants;
BEGIN
    IF owner IS NULL THEN
        SELECT s.owner_id INTO owner FROM canopy.shares s WHERE s.id = p_share_id;
    END IF;
    IF NOT canopy.manages_share(owner, p_share_id) THEN
        RAISE EXCEPTION 'only the share''s owner and administrators manage its participants' USING ERRCODE = 'CN005';
    END IF;
    account := canopy.user_for_contact(p_user_record_name, p_email, p_phone);
    IF p_user_record_name IS NOT NULL AND account IS NULL THEN
        RAISE EXCEPTION 'no user has the userRecordName %', p_user_record_name USING ERRCODE = 'CN004';
    END IF;
    SELECT p.* INTO found FROM canopy.participants p
     WHERE p.owner_id = owner AND p.share_id = p_share_id
       AND ((account IS NOT NULL AND p.user_id = account)
            OR (p_email IS NOT NULL AND p.email = lower(p_email))
            OR (p_phone IS NOT NULL AND p.phone = p_phone))
     ORDER BY (p.user_id IS NOT DISTINCT FROM account) DESC, p.id
     LIMIT 1;
    IF found.id IS NULL THEN
        found.user_id := account;
        found.owner_id := owner;
    END IF;
    RETURN found;
END
$$;

-- setParticipant: adds a participant (PENDING) or changes one. Someone who
-- was REMOVED and is added again is PENDING again. The owner may do this
-- for anyone but the owner; an administrator for PRIVATE_USERs only (the
-- policies on canopy.participants say so; a refused change is CN005 or
-- 42501). p_owner_id: the share's owner (DECISIONS 170); supersedes the
-- 6-argument version, dropped here.
DROP FUNCTION IF EXISTS canopy.put_participant(bigint, text, text, text, text, text);
CREATE OR REPLACE FUNCTION canopy.put_participant(
    p_share_id bigint, p_user_record_name text, p_email text, p_phone text, p_role text, p_permission text,
    p_owner_id bigint DEFAULT NULL
) RETURNS void
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    existing canopy.participants := canopy.managed_participant(p_share_id, p_user_record_name, p_email, p_phone, p_owner_id);
BEGIN
    IF existing.id IS NULL OR existing.status = 'REMOVED' THEN
        -- An invitation: capped per user per day (daily_quotas.sql).
        PERFORM canopy.use_daily_quota('invitation');
    END IF;
    IF existing.id IS NULL THEN
        INSERT INTO canopy.participants (share_id, owner_id, user_id, email, phone, role, permission, status)
        VALUES (p_share_id, existing.owner_id, existing.user_id, lower(p_email), p_phone, p_role, p_permission, 'PENDING');
        RETURN;
    END IF;
    IF existing.role = 'OWNER' THEN
        RAISE EXCEPTION 'the owner is always a participant with READ_WRITE' USING ERRCODE = 'CN004';
    END IF;
    UPDATE canopy.participants
       SET role = p_role, permission = p_permission,
           status = CASE WHEN status = 'REMOVED' THEN 'PENDING' ELSE status END
     WHERE owner_id = existing.owner_id AND id = existing.id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'you may not change this participant' USING ERRCODE = 'CN005';
    END IF;
END
$$;

-- removeParticipant: the participant becomes REMOVED (and cannot accept
-- again until added again). Not the owner. An administrator removing
-- themselves leaves, as any participant may. Since issue 38 also by phone
-- (a pending invitation by phone); supersedes the 3-argument version,
-- dropped here. p_owner_id: the share's owner (DECISIONS 170); supersedes
-- the 4-argument version, dropped here.
DROP FUNCTION IF EXISTS canopy.remove_participant(bigint, text, text);
DROP FUNCTION IF EXISTS canopy.remove_participant(bigint, text, text, text);
CREATE OR REPLACE FUNCTION canopy.remove_participant(
    p_share_id bigint, p_user_record_name text, p_email text, p_phone text, p_owner_id bigint DEFAULT NULL
) RETURNS void
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    existing canopy.participants := canopy.managed_participant(p_share_id, p_user_record_name, p_email, p_phone, p_owner_id);
BEGIN
    IF existing.id IS NULL OR existing.status = 'REMOVED' THEN
        RAISE EXCEPTION 'no such participant in the share' USING ERRCODE = 'CN006';
    END IF;
    IF existing.role = 'OWNER' THEN
        RAISE EXCEPTION 'the owner cannot be removed (deleteShare stops sharing)' USING ERRCODE = 'CN004';
    END IF;
    UPDATE canopy.participants SET status = 'REMOVED' WHERE owner_id = existing.owner_id AND id = existing.id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'you may not remove this participant' USING ERRCODE = 'CN005';
    END IF;
END
$$;

-- saveShare: creates the share of a zone or root record, or updates it.
-- p_public_permission NULL keeps the current one (NONE for a new share);
-- p_set_title false keeps the title. Participants are added or changed.
-- Since issue 38 (supersedes the 6-argument version, dropped here): also
-- allowsAccessRequests (NULL keeps it; false for a new share) and the
-- display fields cloudkit.share.type and thumbnailImageData (p_set_type,
-- p_set_thumbnail false keep them). Since DECISIONS 170 (supersedes the
-- 11-argument version, dropped here): p_owner_id, the zone's owner, by
-- which every table is read and the share written (on Citus, the owner's
-- shard; NULL, from an older gateway: the zone's row says), and on Citus
-- a new share's URL token is kept in canopy.share_tokens here, on the
-- coordinator (canopy.keep_share_token: no shard trigger may write a
-- reference table).
DROP FUNCTION IF EXISTS canopy.save_share(bigint, text, boolean, text, text, jsonb);
DROP FUNCTION IF EXISTS canopy.save_share(bigint, text, boolean, text, text, jsonb, boolean, boolean, text, boolean, bytea);
CREATE OR REPLACE FUNCTION canopy.save_share(
    p_zone_id bigint, p_root_name text, p_set_title boolean, p_title text, p_public_permission text, p_participants jsonb,
    p_allows_access_requests boolean, p_set_type boolean, p_type text, p_set_thumbnail boolean, p_thumbnail bytea,
    p_owner_id bigint DEFAULT NULL
) RETURNS bigint
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    owner bigint := p_owner_id;
    share_id bigint;
    token text;
    root_id bigint;
    participant jsonb;
BEGIN
    IF owner IS NULL THEN
        SELECT z.owner_id INTO owner FROM canopy.zones z WHERE z.id = p_zone_id;
    END IF;
    share_id := canopy.find_share(p_zone_id, p_root_name, owner);
    IF share_id IS NULL THEN
        IF p_root_name IS NOT NULL THEN
            SELECT id INTO root_id FROM canopy.records WHERE owner_id = owner AND zone_id = p_zone_id AND record_name = p_root_name;
        END IF;
        BEGIN
            INSERT INTO canopy.shares (zone_id, owner_id, root_record_id, title, public_permission, allows_access_requests, share_type, thumbnail)
            VALUES (p_zone_id, owner, root_id, CASE WHEN p_set_title THEN p_title END, coalesce(p_public_permission, 'NONE'),
                    coalesce(p_allows_access_requests, false), CASE WHEN p_set_type THEN p_type END,
                    CASE WHEN p_set_thumbnail THEN p_thumbnail END)
            RETURNING id, url_token INTO share_id, token;
        EXCEPTION
            WHEN exclusion_violation THEN
                RAISE EXCEPTION '%', CASE WHEN root_id IS NULL
                    THEN 'the zone has record shares, so it cannot also have a zone-wide share'
                    ELSE 'the zone has a zone-wide share, so it cannot also have record shares' END
                    USING ERRCODE = 'CN002';
            WHEN unique_violation THEN
                RAISE EXCEPTION 'the zone or record was shared at the same time by another request' USING ERRCODE = 'CN002';
        END;
    ELSE
        UPDATE canopy.shares
           SET title = CASE WHEN p_set_title THEN p_title ELSE title END,
               public_permission = coalesce(p_public_permission, public_permission),
               allows_access_requests = coalesce(p_allows_access_requests, allows_access_requests),
               share_type = CASE WHEN p_set_type THEN p_type ELSE share_type END,
               thumbnail = CASE WHEN p_set_thumbnail THEN p_thumbnail ELSE thumbnail END,
               modified_at = now()
         WHERE owner_id = owner AND id = share_id;
    END IF;
    PERFORM canopy.keep_share_token(owner, share_id, token);
    FOR participant IN SELECT value FROM jsonb_array_elements(coalesce(p_participants, '[]')) LOOP
        PERFORM canopy.put_participant(share_id, participant->>'userRecordName', participant->>'email',
            participant->>'phone', participant->>'role', participant->>'permission', owner);
    END LOOP;
    RETURN share_id;
END
$$;

-- A new share's URL token in canopy.share_tokens, on Citus (DECISIONS
-- 170): there the shares' trigger runs on the share's shard, which may not
-- write a reference table, so save_share, on the coordinator, gives the
-- token it read back from its insert. It runs as the caller, the owner
-- (share_tokens_own lets a user write rows of their own shares only), not
-- as a definer: Citus refuses a second user on a shard this transaction
-- wrote, and a reference table written as another user made every later
-- join of a shard with a reference table fail ("placements that were
-- modified over multiple connections", DECISIONS 174). It writes a
-- share's row once only, and a token once only; the caller could write a
-- token for a share of the owner's only by acting as that owner, who reads
-- the share's token anyway. On one PostgreSQL the trigger wrote the row,
-- and this writes nothing.
CREATE OR REPLACE FUNCTION canopy.keep_share_token(p_owner_id bigint, p_share_id bigint, p_token text) RETURNS void
    LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF canopy.citus_node() = 'single' OR p_token IS NULL THEN
        RETURN;
    END IF;
    IF p_owner_id IS DISTINCT FROM canopy.current_user_id() THEN
        RAISE EXCEPTION 'only the share''s owner keeps its URL' USING ERRCODE = 'CN005';
    END IF;
    INSERT INTO canopy.share_tokens (url_token, owner_id, share_id) VALUES (p_token, p_owner_id, p_share_id)
    ON CONFLICT DO NOTHING;
    -- Written already (a coordinator whose tables are not distributed yet
    -- runs the trigger): the same row is no conflict, another is.
    IF NOT FOUND AND NOT EXISTS (SELECT 1 FROM canopy.share_tokens t
                                  WHERE t.url_token = p_token AND t.owner_id = p_owner_id AND t.share_id = p_share_id) THEN
        RAISE EXCEPTION 'the share already has its URL' USING ERRCODE = 'CN002';
    END IF;
END
$$;

-- deleteShare: the share goes (its participants and memberships with it,
-- by their keys and triggers), and on Citus its URL token too (one
-- PostgreSQL's shares_token trigger has removed it already). Returns how
-- many shares were deleted: 0 or 1 (DECISIONS 170).
CREATE OR REPLACE FUNCTION canopy.delete_share(p_share_id bigint, p_owner_id bigint) RETURNS integer
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    token text;
BEGIN
    DELETE FROM canopy.shares WHERE owner_id = p_owner_id AND id = p_share_id RETURNING url_token INTO token;
    IF token IS NULL THEN
        RETURN 0;
    END IF;
    PERFORM canopy.forget_share_token(p_owner_id, p_share_id, token);
    RETURN 1;
END
$$;

-- A deleted share's row of canopy.share_tokens, on Citus, as the caller
-- (keep_share_token says why): only the owner's, and only the row
-- of that share with that token. A share deleted with its zone or root
-- keeps its row on Citus: such a row leads nowhere, as an unknown token
-- does, and no share draws its token again.
CREATE OR REPLACE FUNCTION canopy.forget_share_token(p_owner_id bigint, p_share_id bigint, p_token text) RETURNS void
    LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF canopy.citus_node() = 'single' OR p_owner_id IS DISTINCT FROM canopy.current_user_id() THEN
        RETURN;
    END IF;
    DELETE FROM canopy.share_tokens WHERE url_token = p_token AND owner_id = p_owner_id AND share_id = p_share_id;
END
$$;

-- leaveShare, and deleteZone / deleting a root in SHARED scope: the
-- caller's accepted participation in the zone's shares (only the one
-- rooted at p_root_name when given) ends. An invited participant becomes
-- REMOVED; a PUBLIC_USER's row goes, so the public link works for them
-- again. Returns how many shares were left. Since DECISIONS 170
-- (supersedes the 2-argument SQL version, dropped here): PL/pgSQL (Citus
-- cannot plan a SQL function's parameters in a data-modifying WITH), with
-- p_owner_id, the zone's owner, by which every table is read (NULL, from
-- an older gateway: the zone's row says).
DROP FUNCTION IF EXISTS canopy.leave_shares(bigint, text);
CREATE OR REPLACE FUNCTION canopy.leave_shares(p_zone_id bigint, p_root_name text, p_owner_id bigint DEFAULT NULL) RETURNS integer
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    owner bigint := p_owner_id;
    me bigint := canopy.current_user_id();
    left_invited integer;
    left_public integer;
BEGIN
    IF owner IS NULL THEN
        SELECT z.owner_id INTO owner FROM canopy.zones z WHERE z.id = p_zone_id;
    END IF;
    UPDATE canopy.participants p SET status = 'REMOVED'
     WHERE p.owner_id = owner AND p.user_id = me AND p.status = 'ACCEPTED' AND p.role NOT IN ('OWNER', 'PUBLIC_USER')
       AND p.share_id IN (SELECT s.id FROM canopy.shares s
                            LEFT JOIN canopy.records root ON root.owner_id = s.owner_id AND root.id = s.root_record_id
                           WHERE s.owner_id = owner AND s.zone_id = p_zone_id
                             AND (p_root_name IS NULL OR root.record_name = p_root_name));
    GET DIAGNOSTICS left_invited = ROW_COUNT;
    DELETE FROM canopy.participants p
     WHERE p.owner_id = owner AND p.user_id = me AND p.status = 'ACCEPTED' AND p.role = 'PUBLIC_USER'
       AND p.share_id IN (SELECT s.id FROM canopy.shares s
                            LEFT JOIN canopy.records root ON root.owner_id = s.owner_id AND root.id = s.root_record_id
                           WHERE s.owner_id = owner AND s.zone_id = p_zone_id
                             AND (p_root_name IS NULL OR root.record_name = p_root_name));
    GET DIAGNOSTICS left_public = ROW_COUNT;
    RETURN left_invited + left_public;
END
$$;

-- The caller's own participant row in a share, if any: bound to their
-- account, else an invitation not yet accepted by their email or phone
-- (the bound row first). One definition for share_view, accept_share and
-- request_share_access (issue 38 made it three). Since DECISIONS 170
-- (supersedes the 1-argument SQL version, dropped here): PL/pgSQL (Citus
-- cannot plan a SQL function's parameters over its tables), given the
-- share's owner, by whom the participants are read (NULL: the share's row
-- says).
DROP FUNCTION IF EXISTS canopy.caller_participant_id(bigint);
CREATE OR REPLACE FUNCTION canopy.caller_participant_id(p_share_id bigint, p_owner_id bigint DEFAULT NULL) RETURNS bigint
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    owner bigint := p_owner_id;
    caller canopy.users;
    found bigint;
BEGIN
    SELECT * INTO caller FROM canopy.users WHERE id = canopy.current_user_id();
    IF caller.id IS NULL THEN
        RETURN NULL;
    END IF;
    IF owner IS NULL THEN
        SELECT s.owner_id INTO owner FROM canopy.shares s WHERE s.id = p_share_id;
    END IF;
    SELECT p.id INTO found
      FROM canopy.participants p
     WHERE p.owner_id = owner AND p.share_id = p_share_id
       AND (p.user_id = caller.id
            OR (p.user_id IS NULL AND ((p.email IS NOT NULL AND p.email = caller.email)
                                        OR (p.phone IS NOT NULL AND p.phone = caller.phone))))
     ORDER BY (p.user_id IS NOT NULL) DESC, p.id
     LIMIT 1;
    RETURN found;
END
$$;

-- What the share at a URL token shows the caller: only to its owner, a
-- participant who is not REMOVED (an invitation by the caller's email or
-- phone counts) or anyone when its public permission is not NONE (these
-- may open it: may_open); and, since issue 38, to a signed-in caller who
-- may ask for access (allows_access_requests, not blocked), with
-- permission NONE and their request's status. No row otherwise, the same
-- as for a token that does not exist. permission is what the caller has
-- (or would get by accepting the public link). owner_display_name (the
-- owner's name, as CKShare.Metadata's ownerIdentity carries it) is what an
-- invitation page shows. A function's result type cannot be replaced in
-- place: each added column drops the earlier version (this supersedes the
-- one of issue 17). Since DECISIONS 170: PL/pgSQL (Citus cannot plan a SQL
-- function's parameters over its tables), the token's owner and share
-- found first and every table read by that owner; owner_id added.
DROP FUNCTION IF EXISTS canopy.share_view(text);
CREATE FUNCTION canopy.share_view(p_token text)
    RETURNS TABLE (share_id bigint, zone_id bigint, zone_name text, owner_name text, root_record_name text,
                   title text, public_permission text, url_token text, role text, permission text, status text,
                   owner_display_name text, allows_access_requests boolean, share_type text, thumbnail bytea,
                   may_open boolean, request_status text, root_record_id bigint, owner_id bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    token canopy.share_tokens;
    me bigint := canopy.current_user_id();
    mine canopy.participants;
    asked text;
BEGIN
    SELECT * INTO token FROM canopy.share_tokens t WHERE t.url_token = p_token;
    IF token.url_token IS NULL THEN
        RETURN;
    END IF;
    -- The caller's participant row and request, each read alone: on Citus
    -- a join to a row that may not be there (a NULL id) is no longer one
    -- the planner sees as co-located.
    mine.id := canopy.caller_participant_id(token.share_id, token.owner_id);
    IF mine.id IS NOT NULL THEN
        SELECT * INTO mine FROM canopy.participants p WHERE p.owner_id = token.owner_id AND p.id = mine.id;
    END IF;
    IF me IS NOT NULL THEN
        SELECT r.status INTO asked FROM canopy.share_requests r
         WHERE r.owner_id = token.owner_id AND r.share_id = token.share_id AND r.user_id = me;
    END IF;
    RETURN QUERY
    SELECT s.id, z.id, z.name, owner.record_name, root.record_name, s.title, s.public_permission, s.url_token,
           mine.role,
           CASE WHEN mine.status = 'REMOVED' THEN 'NONE'
                WHEN mine.status IS NULL AND s.public_permission = 'NONE' THEN 'NONE'
                ELSE coalesce(mine.permission, s.public_permission) END,
           mine.status,
           coalesce(owner.display_name, owner.name),
           s.allows_access_requests, s.share_type, s.thumbnail,
           mine.status IN ('PENDING', 'ACCEPTED') OR s.public_permission <> 'NONE',
           asked,
           s.root_record_id,
           s.owner_id
      FROM canopy.shares s
      JOIN canopy.zones z ON z.owner_id = s.owner_id AND z.id = s.zone_id
      JOIN canopy.users owner ON owner.id = z.owner_id
      LEFT JOIN canopy.records root ON root.owner_id = s.owner_id AND root.id = s.root_record_id
     WHERE s.owner_id = token.owner_id AND s.id = token.share_id
       AND (mine.status IN ('PENDING', 'ACCEPTED') OR s.public_permission <> 'NONE'
            OR (s.allows_access_requests AND me IS NOT NULL
                AND asked IS DISTINCT FROM 'BLOCKED'));
END
$$;

-- ShareMetadata.rootRecord(desiredKeys) (issue 38; CloudKit's
-- shouldFetchRootRecord and rootRecordDesiredKeys): the root record of a
-- hierarchy share, for someone who may open the share (invited, or the
-- share is public) before they accept, with only the keys asked for (NULL:
-- all). Nothing for a zone-wide share, a requester or anyone else. A
-- definer: the caller cannot read the record yet. PL/pgSQL since
-- DECISIONS 170 (Citus cannot plan a SQL function's parameters over its
-- tables): the share found first, then its root by its owner.
CREATE OR REPLACE FUNCTION canopy.share_root_preview(p_token text, p_keys text[]) RETURNS SETOF canopy.records
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    owner bigint;
    root bigint;
BEGIN
    SELECT v.owner_id, v.root_record_id INTO owner, root FROM canopy.share_view(p_token) v WHERE v.may_open;
    IF root IS NULL THEN
        RETURN;
    END IF;
    RETURN QUERY
    SELECT r.id, r.zone_id, r.record_name, r.record_type,
           CASE WHEN p_keys IS NULL THEN r.fields
                ELSE (SELECT coalesce(jsonb_object_agg(f.key, f.value), '{}') FROM jsonb_each(r.fields) f WHERE f.key = ANY (p_keys)) END,
           r.parent_name, r.share_id, r.change_tag, r.change_seq, r.created_at, r.created_by, r.modified_at, r.modified_by,
           r.created_by_name, r.modified_by_name, r.owner_id
      FROM canopy.records r
     WHERE r.owner_id = owner AND r.id = root;
END
$$;

-- acceptShare: an invited participant (by account, email or phone) becomes
-- ACCEPTED and bound to the caller's account; otherwise, with a public
-- permission, the caller joins as PUBLIC_USER with it. Accepting again is
-- a no-op; REMOVED cannot accept until added again. Everything else is
-- CN005 with the same words as for an unknown URL.
--
-- accept_share (0006) locked the share FOR UPDATE, which waits for (and
-- deadlocks with) a record write holding the zone lock whose foreign key
-- check takes FOR KEY SHARE on the share. FOR NO KEY UPDATE orders accepts
-- just as well without that conflict.
CREATE OR REPLACE FUNCTION canopy.accept_share(p_token text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    caller canopy.users;
    token canopy.share_tokens;
    target canopy.shares;
    invitation canopy.participants;
BEGIN
    SELECT * INTO caller FROM canopy.users WHERE id = canopy.current_user_id();
    -- The token's share (share_tokens, migrations/0041), by its owner and
    -- id; the share row's lock orders concurrent accepts of one share.
    SELECT * INTO token FROM canopy.share_tokens WHERE url_token = p_token;
    -- The gateway's statement named no owner, so it held only the caller's
    -- shards: on Citus the share's owner's are held here, before the first
    -- read of them, so a shard move waits for this (DECISIONS 184).
    PERFORM canopy.hold_placements(ARRAY[token.owner_id]);
    SELECT * INTO target FROM canopy.shares WHERE id = token.share_id AND owner_id = token.owner_id FOR NO KEY UPDATE;
    IF caller.id IS NULL OR target.id IS NULL THEN
        RAISE EXCEPTION 'no share at this URL that you may open' USING ERRCODE = 'CN005';
    END IF;
    -- The gateway's statement named no owner: on Citus the announcement of
    -- the zone's change needs this one (DECISIONS 182).
    PERFORM canopy.announce_owner(target.owner_id);
    -- Found first, then locked: on Citus the lock's statement runs on the
    -- share's shard, where the lookup could not run nested.
    invitation.id := canopy.caller_participant_id(target.id, target.owner_id);
    SELECT * INTO invitation FROM canopy.participants p
     WHERE p.owner_id = target.owner_id AND p.id = invitation.id FOR UPDATE;
    IF invitation.id IS NOT NULL THEN
        IF invitation.status = 'REMOVED' THEN
            RAISE EXCEPTION 'you were removed from this share; the owner must add you again' USING ERRCODE = 'CN005';
        ELSIF invitation.status = 'PENDING' THEN
            UPDATE canopy.participants SET status = 'ACCEPTED', user_id = caller.id, accepted_at = now()
             WHERE owner_id = invitation.owner_id AND id = invitation.id;
        END IF;
    ELSIF target.public_permission <> 'NONE' THEN
        INSERT INTO canopy.participants (share_id, owner_id, user_id, role, permission, status, accepted_at)
        VALUES (target.id, target.owner_id, caller.id, 'PUBLIC_USER', target.public_permission, 'ACCEPTED', now());
    ELSE
        RAISE EXCEPTION 'no share at this URL that you may open' USING ERRCODE = 'CN005';
    END IF;
    RETURN target.id;
END
$$;

REVOKE ALL ON FUNCTION canopy.user_for_contact(text, text, text) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.discover_user(text, text) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.discover_user_by_record_name(text) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.find_share(bigint, text, bigint) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.manages_share(bigint, bigint) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.managed_participant(bigint, text, text, text, bigint) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.put_participant(bigint, text, text, text, text, text, bigint) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.remove_participant(bigint, text, text, text, bigint) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.save_share(bigint, text, boolean, text, text, jsonb, boolean, boolean, text, boolean, bytea, bigint) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.leave_shares(bigint, text, bigint) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.keep_share_token(bigint, bigint, text) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.delete_share(bigint, bigint) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.forget_share_token(bigint, bigint, text) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.caller_participant_id(bigint, bigint) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.share_view(text) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.share_root_preview(text, text[]) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.accept_share(text) FROM PUBLIC, canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.user_for_contact(text, text, text) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.discover_user(text, text) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.discover_user_by_record_name(text) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.find_share(bigint, text, bigint) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.manages_share(bigint, bigint) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.managed_participant(bigint, text, text, text, bigint) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.put_participant(bigint, text, text, text, text, text, bigint) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.remove_participant(bigint, text, text, text, bigint) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.save_share(bigint, text, boolean, text, text, jsonb, boolean, boolean, text, boolean, bytea, bigint) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.leave_shares(bigint, text, bigint) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.keep_share_token(bigint, bigint, text) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.delete_share(bigint, bigint) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.forget_share_token(bigint, bigint, text) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.share_view(text) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.share_root_preview(text, text[]) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.accept_share(text) TO canopy_gateway;

-- The URL token of the share rooted at a record (its CloudKit shortGUID),
-- as the caller may read it, or NULL. For the records of every zone at
-- once (Web Services' zoneWide query, DECISIONS 183): there the records
-- are several owners', and on Citus a correlated subquery on canopy.shares
-- beside them cannot be planned; this function runs on the coordinator
-- and reads the one shard of the record's owner. PL/pgSQL, so that it is
-- not inlined back into that subquery. A zone's own query keeps the
-- subquery (one owner, one shard).
CREATE OR REPLACE FUNCTION canopy.root_share_token(p_owner_id bigint, p_record_id bigint) RETURNS text
    LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    token text;
BEGIN
    SELECT s.url_token INTO token FROM canopy.shares s
     WHERE s.owner_id = p_owner_id AND s.root_record_id = p_record_id LIMIT 1;
    RETURN token;
END
$$;
REVOKE ALL ON FUNCTION canopy.root_share_token(bigint, bigint) FROM PUBLIC, canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.root_share_token(bigint, bigint) TO canopy_gateway;
