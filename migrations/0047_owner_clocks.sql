-- 0047: the database feed's per-owner commit clocks (issue 67; DECISIONS
-- 149, 173).
--
-- A database token (databaseChanges, Web Services' changes/database) held
-- a PostgreSQL snapshot, and each zone and departure the id of the
-- transaction that last changed it. Transaction ids belong to one node: on
-- Citus they mean nothing on another, and rows moved with a shard carry
-- the old node's. Now each owner has a clock, canopy.owner_clocks,
-- co-located with the owner's zones, which a deferred trigger moves on at
-- commit, once for each zone a transaction changed and each departure it
-- wrote, and writes on that zone (zones.changed_position) or departure
-- (zone_departures.change_position). A token holds one position for each
-- owner (sql/functions/change_feeds.sql has why the positions follow
-- commit order). The same design on one PostgreSQL and on Citus.
--
-- Every token issued before this migration holds a snapshot: it is
-- answered CHANGE_TOKEN_EXPIRED once, and its client fetches from null.
-- Existing zones and departures keep position 0 (a first pass reports
-- every zone; a departure at 0 is before every token).
--
-- The clocks' policies are sql/policies/owner_clocks.sql's, their trigger
-- functions sql/functions/change_feeds.sql's and their triggers
-- sql/triggers/zones.sql's; a zone changed between this migration and
-- those files (one transaction after) keeps position 0 until its next
-- change, which no token can have passed: every token before this
-- migration is expired.

SET LOCAL ROLE canopy_owner;

CREATE TABLE canopy.owner_clocks (
    owner_id  bigint PRIMARY KEY,
    position  bigint NOT NULL DEFAULT 0 CONSTRAINT owner_clocks_position_check CHECK (position >= 0)
);
COMMENT ON TABLE canopy.owner_clocks IS 'The database feed''s clock of each zone owner (DECISIONS 149, 173): moved on at commit, once per zone changed and per departure written, by deferred triggers that write the new position on that zone or departure. A database token holds one position per owner. No foreign key: on Citus it is distributed by owner_id, beside the owner''s zones.';
COMMENT ON COLUMN canopy.owner_clocks.owner_id IS 'The zones'' owner (canopy.users.id; never 0, the public zone''s owner, which has no database feed).';
COMMENT ON COLUMN canopy.owner_clocks.position IS 'The last position given: the changes of this owner numbered at or below it have committed.';

INSERT INTO canopy.owner_clocks (owner_id)
SELECT DISTINCT owner_id FROM canopy.zones WHERE owner_id <> 0;

ALTER TABLE canopy.owner_clocks ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.owner_clocks FORCE ROW LEVEL SECURITY;
CREATE POLICY canopy_owner_all ON canopy.owner_clocks TO canopy_owner USING (true) WITH CHECK (true);
REVOKE ALL ON TABLE canopy.owner_clocks FROM PUBLIC;

ALTER TABLE canopy.zones ADD COLUMN changed_position bigint NOT NULL DEFAULT 0;
COMMENT ON COLUMN canopy.zones.changed_position IS 'The owner''s clock (canopy.owner_clocks) when the last transaction that changed the zone committed: what databaseChanges compares with a token''s position for the owner.';
COMMENT ON COLUMN canopy.zones.changed_xid IS 'The id of the last transaction that changed the zone, on this node: canopy.touch_zone''s "already touched in this transaction" (no longer a feed position: changed_position is, since migrations/0047).';

-- The departures' transaction ids go; their position on the owner's clock
-- comes instead, indexed for a user's feed by owner.
ALTER TABLE canopy.zone_departures DROP COLUMN change_xid;
ALTER TABLE canopy.zone_departures ADD COLUMN change_position bigint NOT NULL DEFAULT 0;
COMMENT ON COLUMN canopy.zone_departures.change_position IS 'The owner''s clock (canopy.owner_clocks) when the transaction that wrote the departure committed.';
CREATE INDEX zone_departures_user_idx ON canopy.zone_departures (user_id, scope, owner_id, change_position);
