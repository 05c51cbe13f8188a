-- The gateway's statements run on generic plans (issue 18).
--
-- The gateway prepares each statement shape once per connection and binds
-- its values. With plan_cache_mode = auto, PostgreSQL kept re-planning some
-- shapes on every execution: for W1's lookup, `unnest($n::text[])` is
-- costed at 100 names in the generic plan but at the real count in a custom
-- one, so the custom plan always looked cheaper and the 0.5-0.65 ms of
-- planning was paid on every request, against 0.1 ms to execute. Measured
-- with pgbench as canopy_gateway on the benchmark's database (8 clients):
-- 1,870 lookups/s planned each time, 13,800 on the generic plan. The
-- gateway's statements are written for their generic plans anyway: every
-- condition that should use an index is an index condition whatever the
-- values (LEAKPROOF typed functions; record types, which partial indexes
-- name, are literals, not binds), and W2's page had already settled on its
-- generic plan by itself.
--
-- A setting of the role, so the gateway, pgbench as canopy_gateway (the
-- benchmark's ceiling) and the floor program plan alike. Roles belong to
-- the cluster, so this holds for every database the role connects to.
--
-- Several databases of one cluster may be migrated at once (tests do), and
-- concurrent ALTERs of one role collide ("tuple concurrently updated"): set
-- only when missing, and let a concurrent setter win.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_db_role_setting s JOIN pg_roles r ON r.oid = s.setrole
                    WHERE r.rolname = 'canopy_gateway' AND s.setdatabase = 0
                      AND 'plan_cache_mode=force_generic_plan' = ANY (s.setconfig)) THEN
        BEGIN
            ALTER ROLE canopy_gateway SET plan_cache_mode = force_generic_plan;
        EXCEPTION WHEN unique_violation OR internal_error THEN
            NULL;
        END;
    END IF;
END
$$;
