-- 0041: shares found by their URL token through a table of their own
-- (issue 67, step 1; DECISIONS 159).
--
-- A share's URL token must be unique across every owner, and a lookup by
-- token does not know the owner. On Citus shares are distributed by the
-- owner's id (148), where a unique key must hold it and a lookup without
-- it reads every shard. So the token's uniqueness and the way from a
-- token to its share move to canopy.share_tokens, keyed by the token and
-- holding the share's owner and id; shares.url_token stays (what the
-- answers show) with a key that holds the owner, as 0040's do. On Citus
-- share_tokens is a reference table: a row a share, written once.
--
-- The rows are the shares' triggers' (sql/triggers/shares.sql): one when
-- a share is created, gone with the share. The trigger and the owner's
-- policy are defined here as well, so that a share created between this
-- migration and the repeatable files (applied in a transaction after this
-- one) gets its row.

SET LOCAL ROLE canopy_owner;

CREATE TABLE canopy.share_tokens (
    url_token  text PRIMARY KEY CONSTRAINT share_tokens_strength CHECK (url_token ~ '^[0-9A-Za-z_-]{32,}$'),
    owner_id   bigint NOT NULL,
    share_id   bigint NOT NULL,
    CONSTRAINT share_tokens_share_key UNIQUE (share_id, owner_id)
);
COMMENT ON TABLE canopy.share_tokens IS 'A share''s URL token, and whose share it is: how a share is found by its URL (share_view, accept_share, request_share_access), and what keeps tokens unique across owners. Kept by the shares'' triggers; no foreign key, since on Citus it is a reference table and shares are distributed.';
COMMENT ON COLUMN canopy.share_tokens.url_token IS 'canopy.shares.url_token.';
COMMENT ON COLUMN canopy.share_tokens.owner_id IS 'The share''s owner (canopy.shares.owner_id): where the share is on Citus.';
COMMENT ON COLUMN canopy.share_tokens.share_id IS 'canopy.shares.id.';

INSERT INTO canopy.share_tokens (url_token, owner_id, share_id)
SELECT url_token, owner_id, id FROM canopy.shares;

ALTER TABLE canopy.share_tokens ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.share_tokens FORCE ROW LEVEL SECURITY;
CREATE POLICY canopy_owner_all ON canopy.share_tokens TO canopy_owner USING (true) WITH CHECK (true);
REVOKE ALL ON TABLE canopy.share_tokens FROM PUBLIC;

ALTER TABLE canopy.shares DROP CONSTRAINT shares_url_token_key,
    ADD CONSTRAINT shares_url_token_key UNIQUE (url_token, owner_id);

CREATE OR REPLACE FUNCTION canopy.shares_token() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        DELETE FROM canopy.share_tokens WHERE url_token = OLD.url_token;
    END IF;
    IF TG_OP <> 'DELETE' THEN
        INSERT INTO canopy.share_tokens (url_token, owner_id, share_id) VALUES (NEW.url_token, NEW.owner_id, NEW.id);
    END IF;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION canopy.shares_token() FROM PUBLIC, canopy_gateway;
CREATE TRIGGER shares_token AFTER INSERT OR DELETE OR UPDATE OF url_token ON canopy.shares
    FOR EACH ROW EXECUTE FUNCTION canopy.shares_token();
