-- 0045: a zone's change positions are its own (issue 67; DECISIONS 165).
--
-- Until now every record write, tombstone and departure drew its position
-- from one sequence, canopy.change_seq. On Citus a sequence lives on the
-- coordinator, and the records' triggers run on the workers ("relation
-- canopy.change_seq does not exist", docs/plans/ISSUE_67_SCHEMA_MAP.md
-- §8.7). A zone feed only ever compares positions of one zone, so each
-- zone now numbers its own: canopy.touch_zone adds one to the zone's
-- feed_base when a transaction first writes the zone (under the zone's row
-- lock, held to commit), and the transaction's positions in that zone are
-- (feed_base << 20) + 1, + 2, … (sql/functions/change_feeds.sql,
-- canopy.draw_position).
--
-- The base starts at the zone's creation time in milliseconds, so
-- positions of a zone made now are far above every position the sequence
-- ever gave (about 2^60 against the sequence's count of writes): the
-- change tokens and change tags that clients hold stay below every new
-- position, as they must. The sequence stays, unused, for databases whose
-- functions are not re-applied yet in the same run.
SET LOCAL ROLE canopy_owner;

DO $$
BEGIN
    EXECUTE format('ALTER TABLE canopy.zones ADD COLUMN IF NOT EXISTS feed_base bigint NOT NULL DEFAULT %s',
                   (extract(epoch FROM clock_timestamp()) * 1000)::bigint);
END
$$;
ALTER TABLE canopy.zones ALTER COLUMN feed_base SET DEFAULT (extract(epoch FROM clock_timestamp()) * 1000)::bigint;

COMMENT ON COLUMN canopy.zones.feed_base IS
    'Raised by one when a transaction first writes the zone (canopy.touch_zone, under the zone''s row lock): that transaction''s change positions in the zone are (feed_base << 20) + 1, + 2, … (DECISIONS 165).';
COMMENT ON COLUMN canopy.push_outbox.after_seq IS
    'The zone''s feed_base << 20 when the transaction took the zone''s lock: its changes are at positions above it.';
