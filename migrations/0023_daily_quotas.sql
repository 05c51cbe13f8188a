-- 0023: a cap per user per day on actions that reach other people
-- (issue 35: invitation abuse). canopy.daily_quotas holds each action's cap,
-- which the operator changes with psql; canopy.daily_quota_use counts each
-- user's uses by day. Both under forced row-level security with no
-- privilege for canopy_gateway: the count moves only through
-- canopy.use_daily_quota (sql/functions/daily_quotas.sql), which
-- put_participant (sql/functions/sharing.sql) calls for every invitation.

SET LOCAL ROLE canopy_owner;

CREATE TABLE canopy.daily_quotas (
    action   text PRIMARY KEY,
    per_day  integer NOT NULL CHECK (per_day >= 0)
);
COMMENT ON TABLE canopy.daily_quotas IS 'How many times a user may do an action that reaches other people in a day (UTC). Change with UPDATE as an administrator.';
COMMENT ON COLUMN canopy.daily_quotas.action IS 'invitation: a participant added to a share (or added again after removal).';
COMMENT ON COLUMN canopy.daily_quotas.per_day IS 'Uses allowed per user per UTC day; 0 forbids the action.';
INSERT INTO canopy.daily_quotas (action, per_day) VALUES ('invitation', 200);

CREATE TABLE canopy.daily_quota_use (
    user_id  bigint NOT NULL REFERENCES canopy.users (id) ON DELETE CASCADE,
    action   text NOT NULL REFERENCES canopy.daily_quotas (action) ON DELETE CASCADE,
    day      date NOT NULL,
    used     integer NOT NULL,
    PRIMARY KEY (user_id, action, day)
);
COMMENT ON TABLE canopy.daily_quota_use IS 'Uses of each capped action by user and UTC day; rows of past days may be deleted at will.';
COMMENT ON COLUMN canopy.daily_quota_use.user_id IS 'Who used it.';
COMMENT ON COLUMN canopy.daily_quota_use.action IS 'Which capped action (canopy.daily_quotas).';
COMMENT ON COLUMN canopy.daily_quota_use.day IS 'The UTC day counted.';
COMMENT ON COLUMN canopy.daily_quota_use.used IS 'Uses that day, refused ones not counted.';

ALTER TABLE canopy.daily_quotas ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.daily_quotas FORCE ROW LEVEL SECURITY;
ALTER TABLE canopy.daily_quota_use ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.daily_quota_use FORCE ROW LEVEL SECURITY;
