-- 0028: sharing additions (issue 38, API.md §17): access requests, each
-- share's activity log, and the share's display fields.
--
-- Access requests (CloudKit, iOS 26). A share may allow people who are not
-- its participants to ask for access from its URL; the owner and its
-- administrators then approve (the requester becomes an ACCEPTED
-- participant, marked is_approved_requester), deny (they may ask again) or
-- block (they cannot, and are removed if they were in). One row a share and
-- requester keeps where that stands. Requesters write only through
-- canopy.request_share_access (a definer: they cannot see the share);
-- managers change rows under the policies of sql/policies/share_requests.sql.
--
-- Activity (past CloudKit). An append-only log a share, written by triggers
-- (sql/triggers/share_activity.sql) in the transaction of each change, never
-- by the gateway, which may only read it. Entries outlive their share by a
-- retention period (canopy serve --share-activity-retention-days), so the owner
-- can still read why a zone disappeared; owner_id says whose they are then.

SET LOCAL ROLE canopy_owner;

ALTER TABLE canopy.shares
    ADD COLUMN allows_access_requests boolean NOT NULL DEFAULT false,
    ADD COLUMN share_type text CONSTRAINT shares_type_length CHECK (share_type IS NULL OR char_length(share_type) BETWEEN 1 AND 255),
    ADD COLUMN thumbnail bytea CONSTRAINT shares_thumbnail_size CHECK (thumbnail IS NULL OR octet_length(thumbnail) <= 262144);
COMMENT ON COLUMN canopy.shares.allows_access_requests IS 'allowsAccessRequests: a signed-in person who is not a participant may ask for access from the URL. While false, the URL tells them nothing.';
COMMENT ON COLUMN canopy.shares.share_type IS 'cloudkit.share.type: what kind of thing is shared (a UTI such as com.example.list), shown with invitations.';
COMMENT ON COLUMN canopy.shares.thumbnail IS 'cloudkit.share.thumbnailImageData: a small image shown with invitations; at most 256 KiB.';

ALTER TABLE canopy.participants
    ADD COLUMN is_approved_requester boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN canopy.participants.is_approved_requester IS 'isApprovedRequester: the participant asked for access and was approved, rather than invited.';
COMMENT ON COLUMN canopy.participants.invited_at IS 'When the participant was added (dateAddedToShare).';

CREATE TABLE canopy.share_requests (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    share_id      bigint NOT NULL REFERENCES canopy.shares (id) ON DELETE CASCADE,
    user_id       bigint NOT NULL REFERENCES canopy.users (id) ON DELETE CASCADE,
    status        text NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'APPROVED', 'DENIED', 'BLOCKED')),
    requested_at  timestamptz NOT NULL DEFAULT now(),
    decided_at    timestamptz,
    decided_by    bigint REFERENCES canopy.users (id) ON DELETE SET NULL,
    UNIQUE (share_id, user_id)
);
CREATE INDEX share_requests_pending_idx ON canopy.share_requests (share_id, requested_at) WHERE status IN ('PENDING', 'BLOCKED');
CREATE INDEX share_requests_user_idx ON canopy.share_requests (user_id);
COMMENT ON TABLE canopy.share_requests IS 'Access requests (allowsAccessRequests): one row a share and requester. The share''s owner and administrators read and decide them; the requester writes only through canopy.request_share_access.';
COMMENT ON COLUMN canopy.share_requests.share_id IS 'The share asked for.';
COMMENT ON COLUMN canopy.share_requests.user_id IS 'Who asked (a signed-in account; their verified email or phone is what the managers see).';
COMMENT ON COLUMN canopy.share_requests.status IS 'PENDING (asked), APPROVED (now a participant), DENIED (may ask again), BLOCKED (may not ask again until unblocked).';
COMMENT ON COLUMN canopy.share_requests.requested_at IS 'When they last asked.';
COMMENT ON COLUMN canopy.share_requests.decided_at IS 'When a manager last decided.';
COMMENT ON COLUMN canopy.share_requests.decided_by IS 'Who decided.';

ALTER TABLE canopy.share_requests ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.share_requests FORCE ROW LEVEL SECURITY;

CREATE TABLE canopy.share_activity (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    share_id       bigint NOT NULL,
    zone_id        bigint NOT NULL,
    zone_name      text NOT NULL,
    root_name      text,
    owner_id       bigint REFERENCES canopy.users (id) ON DELETE CASCADE,
    event          text NOT NULL CHECK (event IN (
                       'SHARE_CREATED', 'SHARE_DELETED', 'ZONE_DELETED', 'ROOT_DELETED',
                       'INVITED', 'ACCEPTED', 'PERMISSION_CHANGED', 'REMOVED', 'LEFT',
                       'REQUEST_MADE', 'REQUEST_APPROVED', 'REQUEST_DENIED', 'REQUESTER_BLOCKED', 'REQUESTER_UNBLOCKED',
                       'PUBLIC_PERMISSION_CHANGED', 'ACCESS_REQUESTS_CHANGED')),
    actor_id       bigint REFERENCES canopy.users (id) ON DELETE SET NULL,
    actor_name     text,
    subject_id     bigint REFERENCES canopy.users (id) ON DELETE SET NULL,
    subject        text,
    detail         jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(detail) = 'object'),
    at             timestamptz NOT NULL DEFAULT now(),
    share_gone_at  timestamptz
);
CREATE INDEX share_activity_share_idx ON canopy.share_activity (share_id, id);
CREATE INDEX share_activity_gone_idx ON canopy.share_activity (share_gone_at) WHERE share_gone_at IS NOT NULL;
CREATE INDEX share_activity_owner_zone_idx ON canopy.share_activity (owner_id, zone_name, id);
COMMENT ON TABLE canopy.share_activity IS 'Each share''s activity log, append-only: written by triggers in the transaction of the change, never changed or deleted by the gateway. Kept while the share lives and for the retention period after (canopy.purge_share_activity).';
COMMENT ON COLUMN canopy.share_activity.share_id IS 'The share (no foreign key: entries outlive it).';
COMMENT ON COLUMN canopy.share_activity.zone_id IS 'The share''s zone, for canopy shares activity after the share is gone.';
COMMENT ON COLUMN canopy.share_activity.zone_name IS 'The zone''s name when it happened (the zone may be gone).';
COMMENT ON COLUMN canopy.share_activity.root_name IS 'The root record''s recordName, for a hierarchy share.';
COMMENT ON COLUMN canopy.share_activity.owner_id IS 'The zone''s owner, who reads the entries of a share that is gone.';
COMMENT ON COLUMN canopy.share_activity.event IS 'What happened (docs/SHARING.md, "Activity").';
COMMENT ON COLUMN canopy.share_activity.actor_id IS 'Who did it; NULL for the server (an administrator''s command, a cascade).';
COMMENT ON COLUMN canopy.share_activity.actor_name IS 'The actor''s userRecordName when it happened.';
COMMENT ON COLUMN canopy.share_activity.subject_id IS 'The account the entry is about (a participant, a requester), if it has one.';
COMMENT ON COLUMN canopy.share_activity.subject IS 'Who the entry is about: a userRecordName, or the email or phone of an invitation not yet accepted.';
COMMENT ON COLUMN canopy.share_activity.detail IS 'What changed: role, permission, from, to.';
COMMENT ON COLUMN canopy.share_activity.at IS 'When (the transaction''s time).';
COMMENT ON COLUMN canopy.share_activity.share_gone_at IS 'When the share was deleted; the entry is purged a retention period later.';

ALTER TABLE canopy.share_activity ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.share_activity FORCE ROW LEVEL SECURITY;
