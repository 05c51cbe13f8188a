-- canopy.visible_user_ids() (0009) called its three helpers inside its
-- WHERE clause, where PostgreSQL evaluates a STABLE function once per
-- participant row it filters: with a population of a few thousand
-- participants (make bench), a member of 40 shares paid about 8 ms for it
-- on every read that joins canopy.users, such as naming a zone's owner in
-- SHARED scope (issue 7, W5). Same result, the helpers called once each.

SET LOCAL ROLE canopy_owner;

CREATE OR REPLACE FUNCTION canopy.visible_user_ids() RETURNS bigint[]
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    managed bigint[] := canopy.owned_share_ids() || canopy.admin_share_ids();
    joined bigint[] := canopy.member_share_ids(false);
BEGIN
    RETURN (
        SELECT coalesce(array_agg(DISTINCT p.user_id), '{}')
          FROM canopy.participants p
         WHERE p.user_id IS NOT NULL
           AND (p.share_id = ANY (managed)
                OR (p.share_id = ANY (joined) AND p.role = 'OWNER'))
    );
END
$$;
