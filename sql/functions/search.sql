-- `self CONTAINS 'text'` over all string fields: canopy.search_document
-- and canopy.search_query (public.unaccent, from the baseline).
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent. Supersedes the
-- definitions in archive/0005.

SET LOCAL ROLE canopy_owner;

-- `self CONTAINS 'text'`: the words of a record's string fields (and lists
-- of strings), lower-cased and without accents, against all the words of
-- the text.
CREATE OR REPLACE FUNCTION canopy.search_document(p_fields jsonb) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$
    SELECT to_tsvector('simple'::regconfig, public.unaccent('public.unaccent'::regdictionary, coalesce(string_agg(v, ' '), '')))
      FROM (SELECT f.value #>> '{}' AS v FROM jsonb_each(p_fields) f WHERE jsonb_typeof(f.value) = 'string'
            UNION ALL
            SELECT e #>> '{}' FROM jsonb_each(p_fields) f,
                   jsonb_array_elements(CASE WHEN jsonb_typeof(f.value) = 'array' THEN f.value ELSE '[]' END) e
             WHERE jsonb_typeof(e) = 'string') strings
$$;

CREATE OR REPLACE FUNCTION canopy.search_query(p_text text) RETURNS tsquery
    LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$ SELECT plainto_tsquery('simple'::regconfig, public.unaccent('public.unaccent'::regdictionary, p_text)) $$;

REVOKE ALL ON FUNCTION canopy.search_document(jsonb) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.search_query(text) FROM PUBLIC, canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.search_document(jsonb) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.search_query(text) TO canopy_gateway;
