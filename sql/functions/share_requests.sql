-- Access requests (issue 38, docs/API.md §17; CloudKit iOS 26):
-- request_share_access, decide_share_request, share_requesters.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent.
--
-- A requester cannot see the share they ask for, so asking is a definer
-- (request_share_access) that answers exactly as accept_share does for a
-- URL that leads nowhere whenever the share does not allow requests or has
-- blocked the caller. Deciding runs as the caller: row-level security on
-- canopy.share_requests and canopy.participants says that only the share's
-- owner and its administrators may (sql/policies/share_requests.sql).
--
-- SQLSTATEs: CN004 INVALID_ARGUMENTS, CN005 PERMISSION_FAILURE, CN006
-- UNKNOWN_ITEM.

SET LOCAL ROLE canopy_owner;

-- requestShareAccess(url): the caller asks for access to the share at the
-- URL. A participant who may already open it (PENDING or ACCEPTED) asks
-- nothing; asking again while PENDING changes nothing; after a denial, or
-- after being removed, the caller may ask again. Returns the share's id.
CREATE OR REPLACE FUNCTION canopy.request_share_access(p_token text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    caller canopy.users;
    token canopy.share_tokens;
    target canopy.shares;
    mine bigint;
    standing text;
    earlier canopy.share_requests;
BEGIN
    SELECT * INTO caller FROM canopy.users WHERE id = canopy.current_user_id();
    -- The token's share (share_tokens, migrations/0041), by owner and id.
    SELECT * INTO token FROM canopy.share_tokens WHERE url_token = p_token;
    PERFORM canopy.hold_placements(ARRAY[token.owner_id]);   -- as accept_share does (DECISIONS 184)
    SELECT * INTO target FROM canopy.shares WHERE id = token.share_id AND owner_id = token.owner_id FOR NO KEY UPDATE;
    IF caller.id IS NULL OR target.id IS NULL THEN
        RAISE EXCEPTION 'no share at this URL that you may open' USING ERRCODE = 'CN005';
    END IF;
    PERFORM canopy.announce_owner(target.owner_id);   -- DECISIONS 182
    mine := canopy.caller_participant_id(target.id, target.owner_id);
    SELECT p.status INTO standing FROM canopy.participants p WHERE p.owner_id = target.owner_id AND p.id = mine;
    IF standing IN ('PENDING', 'ACCEPTED') THEN
        RETURN target.id;   -- already invited or in: nothing to ask
    END IF;
    SELECT * INTO earlier FROM canopy.share_requests
     WHERE owner_id = target.owner_id AND share_id = target.id AND user_id = caller.id FOR UPDATE;
    IF NOT target.allows_access_requests OR earlier.status = 'BLOCKED' THEN
        RAISE EXCEPTION 'no share at this URL that you may open' USING ERRCODE = 'CN005';
    END IF;
    IF earlier.id IS NULL THEN
        -- A request is an invitation the other way round: the same daily cap.
        PERFORM canopy.use_daily_quota('invitation');
        INSERT INTO canopy.share_requests (share_id, owner_id, user_id) VALUES (target.id, target.owner_id, caller.id);
    ELSIF earlier.status <> 'PENDING' THEN
        PERFORM canopy.use_daily_quota('invitation');
        UPDATE canopy.share_requests
           SET status = 'PENDING', requested_at = now(), decided_at = NULL, decided_by = NULL
         WHERE owner_id = earlier.owner_id AND id = earlier.id;
    END IF;
    RETURN target.id;
END
$$;

-- approveAccessRequest / denyAccessRequest / blockAccessRequest /
-- unblockRequester: the share's owner or an administrator decides about the
-- account p_user_record_name. APPROVE (a PENDING request) makes them an
-- ACCEPTED PRIVATE_USER with p_permission, marked is_approved_requester;
-- DENY (a PENDING request) lets them ask again; BLOCK (a request in any
-- state, or a participant) stops them asking and removes them if they were
-- in; UNBLOCK forgets the block. Runs as the caller: the policies refuse
-- anyone else. p_owner_id, the share's owner, by which every table is read
-- (DECISIONS 170; NULL, from an older gateway: the share's row says);
-- supersedes the 4-argument version, dropped here.
DROP FUNCTION IF EXISTS canopy.decide_share_request(bigint, text, text, text);
CREATE OR REPLACE FUNCTION canopy.decide_share_request(
    p_share_id bigint, p_user_record_name text, p_decision text, p_permission text, p_owner_id bigint DEFAULT NULL
) RETURNS void
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    owner bigint := p_owner_id;
    requester bigint;
    pending canopy.share_requests;
    member canopy.participants;
    decided text;
BEGIN
    IF owner IS NULL THEN
        SELECT s.owner_id INTO owner FROM canopy.shares s WHERE s.id = p_share_id;
    END IF;
    IF NOT canopy.manages_share(owner, p_share_id) THEN
        RAISE EXCEPTION 'only the share''s owner and administrators decide access requests' USING ERRCODE = 'CN005';
    END IF;
    IF p_decision NOT IN ('APPROVE', 'DENY', 'BLOCK', 'UNBLOCK') THEN
        RAISE EXCEPTION 'unknown decision %', p_decision USING ERRCODE = 'CN004';
    END IF;
    requester := canopy.user_for_contact(p_user_record_name, NULL, NULL);
    IF requester IS NULL THEN
        RAISE EXCEPTION 'no user has the userRecordName %', p_user_record_name USING ERRCODE = 'CN006';
    END IF;
    SELECT * INTO pending FROM canopy.share_requests WHERE owner_id = owner AND share_id = p_share_id AND user_id = requester FOR UPDATE;
    SELECT * INTO member FROM canopy.participants WHERE owner_id = owner AND share_id = p_share_id AND user_id = requester;

    IF p_decision IN ('APPROVE', 'DENY') THEN
        IF pending.id IS NULL OR pending.status <> 'PENDING' THEN
            RAISE EXCEPTION '% has no pending request for this share', p_user_record_name USING ERRCODE = 'CN006';
        END IF;
        -- The status a value of its own: Citus sent `CASE p_decision WHEN
        -- 'APPROVE' …` to the shard as `CASE 'APPROVE'::text WHEN
        -- NULL::boolean …`, which fails there (DECISIONS 176).
        decided := CASE WHEN p_decision = 'APPROVE' THEN 'APPROVED' ELSE 'DENIED' END;
        UPDATE canopy.share_requests
           SET status = decided,
               decided_at = now(), decided_by = canopy.current_user_id()
         WHERE owner_id = owner AND id = pending.id;
        IF p_decision = 'APPROVE' THEN
            IF p_permission NOT IN ('READ_ONLY', 'READ_WRITE') THEN
                RAISE EXCEPTION 'an approved requester''s permission is READ_ONLY or READ_WRITE' USING ERRCODE = 'CN004';
            END IF;
            PERFORM canopy.use_daily_quota('invitation');
            IF member.id IS NULL THEN
                INSERT INTO canopy.participants (share_id, owner_id, user_id, role, permission, status, accepted_at, is_approved_requester)
                VALUES (p_share_id, owner, requester, 'PRIVATE_USER', p_permission, 'ACCEPTED', now(), true);
            ELSE
                UPDATE canopy.participants
                   SET role = 'PRIVATE_USER', permission = p_permission, status = 'ACCEPTED',
                       accepted_at = now(), is_approved_requester = true
                 WHERE owner_id = owner AND id = member.id;
                IF NOT FOUND THEN
                    RAISE EXCEPTION 'you may not change this participant' USING ERRCODE = 'CN005';
                END IF;
            END IF;
        END IF;
    ELSIF p_decision = 'BLOCK' THEN
        IF member.role = 'OWNER' THEN
            RAISE EXCEPTION 'the owner cannot be blocked' USING ERRCODE = 'CN004';
        END IF;
        IF pending.id IS NULL AND member.id IS NULL THEN
            RAISE EXCEPTION '% has neither asked for nor taken part in this share', p_user_record_name USING ERRCODE = 'CN006';
        END IF;
        IF pending.id IS NULL THEN
            INSERT INTO canopy.share_requests (share_id, owner_id, user_id, status, decided_at, decided_by)
            VALUES (p_share_id, owner, requester, 'BLOCKED', now(), canopy.current_user_id());
        ELSIF pending.status <> 'BLOCKED' THEN
            UPDATE canopy.share_requests SET status = 'BLOCKED', decided_at = now(), decided_by = canopy.current_user_id()
             WHERE owner_id = owner AND id = pending.id;
        END IF;
        IF member.id IS NOT NULL AND member.status <> 'REMOVED' THEN
            UPDATE canopy.participants SET status = 'REMOVED' WHERE owner_id = owner AND id = member.id;
            IF NOT FOUND THEN
                RAISE EXCEPTION 'you may not remove this participant' USING ERRCODE = 'CN005';
            END IF;
        END IF;
    ELSE
        IF pending.id IS NULL OR pending.status <> 'BLOCKED' THEN
            RAISE EXCEPTION '% is not blocked from this share', p_user_record_name USING ERRCODE = 'CN006';
        END IF;
        DELETE FROM canopy.share_requests WHERE owner_id = owner AND id = pending.id;
    END IF;
END
$$;

-- Share.accessRequests: the pending and blocked requesters of a share the
-- caller owns or administers (nothing for anyone else), oldest first, with
-- their verified contacts. A definer: requesters are not participants, so
-- users_select would hide them. Given the share's owner (DECISIONS 174):
-- PL/pgSQL, its reads by the owner, so on Citus each is one task on the
-- owner's shard (Citus cannot plan a SQL function's parameters over its
-- tables). On Citus a definer cannot read a shard this transaction wrote
-- as the gateway, so a mutation's answer that asks for accessRequests
-- fails there (the requests are read by a query after it). NULL owner
-- (an older gateway): the share's row says.
DROP FUNCTION IF EXISTS canopy.share_requesters(bigint);
CREATE OR REPLACE FUNCTION canopy.share_requesters(p_share_id bigint, p_owner_id bigint DEFAULT NULL)
    RETURNS TABLE (record_name text, name text, display_name text, email text, phone text, status text, requested_at timestamptz)
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    owner bigint := p_owner_id;
BEGIN
    IF owner IS NULL THEN
        EXECUTE 'SELECT s.owner_id FROM canopy.shares s WHERE s.id = $1' INTO owner USING p_share_id;
    END IF;
    IF owner IS NULL OR NOT canopy.manages_share(owner, p_share_id) THEN
        RETURN;
    END IF;
    RETURN QUERY EXECUTE
        'SELECT u.record_name, u.name, u.display_name, u.email, u.phone, r.status, r.requested_at
           FROM canopy.share_requests r JOIN canopy.users u ON u.id = r.user_id
          WHERE r.owner_id = $2 AND r.share_id = $1 AND r.status IN (''PENDING'', ''BLOCKED'')
          ORDER BY r.requested_at, r.id'
        USING p_share_id, owner;
END
$$;

REVOKE ALL ON FUNCTION canopy.request_share_access(text) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.decide_share_request(bigint, text, text, text, bigint) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.share_requesters(bigint, bigint) FROM PUBLIC, canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.request_share_access(text) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.decide_share_request(bigint, text, text, text, bigint) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.share_requesters(bigint, bigint) TO canopy_gateway;
