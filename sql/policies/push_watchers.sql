-- Row-level security on canopy.push_watchers (migrations/0043): its policy
-- canopy_owner_all, and no grant to canopy_gateway: only the owner's
-- functions read it (push_covered) and only the push_subscriptions_watch
-- trigger writes it.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent.

SET LOCAL ROLE canopy_owner;

DROP POLICY IF EXISTS canopy_owner_all ON canopy.push_watchers;
CREATE POLICY canopy_owner_all ON canopy.push_watchers TO canopy_owner USING (true) WITH CHECK (true);

REVOKE ALL ON TABLE canopy.push_watchers FROM canopy_gateway;
