-- Typed field extractors for `canopy schema apply`'s expression indexes
-- and the query compiler (json_number, string_field, number_field,
-- timestamp_field, reference_field, boolean_field, epoch_ms, search_words,
-- text_list_field), and the LEAKPROOF operators canopy.@@ and canopy.@>
-- with their GIN operator classes.
--
-- Repeatable: re-applied by `canopy migrate up` whenever this file's checksum
-- changes (sql/README.md). Every statement is idempotent. Supersedes the
-- definitions in archive/0008.
--
-- Why the indexes are on functions and not on generated columns: under
-- row-level security PostgreSQL uses a condition as an index condition only
-- when every function in it is LEAKPROOF (docs/API.md, design principle 4), and no
-- JSONB operator or cast is. Each function below reads one typed value out
-- of `fields` and can raise no error whatever the data, so it is declared
-- LEAKPROOF; `canopy schema apply` builds expression indexes on them
-- (CREATE INDEX CONCURRENTLY, writers never blocked), and the query compiler
-- writes its conditions with the same functions. A generated column per
-- field would rewrite the whole table under an exclusive lock when added.
--
-- LEAKPROOF and LANGUAGE internal need a superuser, so this file runs as
-- the administrator (no SET LOCAL ROLE) and hands every object to
-- canopy_owner; CREATE OR REPLACE keeps that owner and the grants.
--
-- Changing what one of these IMMUTABLE functions answers changes what the
-- indexes built on it hold: that needs a REINDEX in a versioned migration.
-- A change of how it computes the same answers (number_field and
-- timestamp_field, issue 51) does not.

-- A number from JSON as float8, or NULL. Numbers beyond float8's range
-- (JSON allows them) are NULL rather than an error.
CREATE OR REPLACE FUNCTION canopy.json_number(p_value jsonb) RETURNS float8
    LANGUAGE plpgsql IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE
AS $$
DECLARE
    number numeric;
BEGIN
    IF jsonb_typeof(p_value) <> 'number' THEN
        RETURN NULL;
    END IF;
    number := p_value::numeric;
    IF abs(number) > 1e308 THEN
        RETURN NULL;
    ELSIF abs(number) < 1e-300 THEN
        RETURN 0;
    END IF;
    RETURN number::float8;
END
$$;

-- STRING field values (and nothing else) as text.
CREATE OR REPLACE FUNCTION canopy.string_field(p_fields jsonb, p_name text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE
AS $$
DECLARE
    value jsonb := p_fields -> p_name;
BEGIN
    IF jsonb_typeof(value) = 'string' THEN
        RETURN value #>> '{}';
    END IF;
    RETURN NULL;
END
$$;

-- INT64 and DOUBLE field values as float8 (the predicate language compares
-- numbers as float8). json_number's body written out rather than called
-- (issue 51): each record saved evaluates this once per index on it, and a
-- second PL/pgSQL call a row was a measurable part of a batch's index
-- upkeep. The answers are json_number's, value for value, so the indexes
-- built on the earlier definition hold the same keys and need no REINDEX.
CREATE OR REPLACE FUNCTION canopy.number_field(p_fields jsonb, p_name text) RETURNS float8
    LANGUAGE plpgsql IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE
AS $$
DECLARE
    value jsonb := p_fields -> p_name;
    number numeric;
BEGIN
    IF value IS NULL OR jsonb_typeof(value) <> 'number' THEN
        RETURN NULL;
    END IF;
    number := value::numeric;
    IF abs(number) > 1e308 THEN
        RETURN NULL;
    ELSIF abs(number) < 1e-300 THEN
        RETURN 0;
    END IF;
    RETURN number::float8;
END
$$;

-- TIMESTAMP field values as milliseconds since the epoch; json_number's
-- body written out, as in number_field (the same answers, no REINDEX).
CREATE OR REPLACE FUNCTION canopy.timestamp_field(p_fields jsonb, p_name text) RETURNS float8
    LANGUAGE plpgsql IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE
AS $$
DECLARE
    value jsonb := p_fields -> p_name;
    number numeric;
BEGIN
    IF jsonb_typeof(value) = 'object' AND value ->> 'type' = 'TIMESTAMP' AND jsonb_typeof(value -> 'value') = 'number' THEN
        number := (value -> 'value')::numeric;
        IF abs(number) > 1e308 THEN
            RETURN NULL;
        ELSIF abs(number) < 1e-300 THEN
            RETURN 0;
        END IF;
        RETURN number::float8;
    END IF;
    RETURN NULL;
END
$$;

-- REFERENCE field values as the record name they point to.
CREATE OR REPLACE FUNCTION canopy.reference_field(p_fields jsonb, p_name text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE
AS $$
DECLARE
    value jsonb := p_fields -> p_name;
BEGIN
    IF jsonb_typeof(value) = 'object' AND value ->> 'type' = 'REFERENCE' AND jsonb_typeof(value -> 'recordName') = 'string' THEN
        RETURN value ->> 'recordName';
    END IF;
    RETURN NULL;
END
$$;

-- BOOLEAN field values.
CREATE OR REPLACE FUNCTION canopy.boolean_field(p_fields jsonb, p_name text) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE
AS $$
DECLARE
    value jsonb := p_fields -> p_name;
BEGIN
    IF jsonb_typeof(value) = 'boolean' THEN
        RETURN value::boolean;
    END IF;
    RETURN NULL;
END
$$;

-- creationDate and modificationDate as milliseconds since the epoch. The
-- epoch does not depend on the time zone, so this is immutable.
CREATE OR REPLACE FUNCTION canopy.epoch_ms(p_time timestamptz) RETURNS float8
    LANGUAGE plpgsql IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE
AS $$
BEGIN
    RETURN (extract(epoch FROM p_time) * 1000)::float8;
END
$$;

-- The words of the named STRING and LIST<STRING> fields (SEARCHABLE ones),
-- lower-cased and without accents, as `self CONTAINS` matches them. The
-- text is cut at 200,000 characters, below what a tsvector can hold, so it
-- can never fail.
CREATE OR REPLACE FUNCTION canopy.search_words(p_fields jsonb, p_names text[]) RETURNS tsvector
    LANGUAGE plpgsql IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE
AS $$
DECLARE
    name text;
    value jsonb;
    element jsonb;
    words text := '';
BEGIN
    FOREACH name IN ARRAY p_names LOOP
        value := p_fields -> name;
        IF jsonb_typeof(value) = 'string' THEN
            words := words || ' ' || (value #>> '{}');
        ELSIF jsonb_typeof(value) = 'array' THEN
            FOR element IN SELECT e FROM jsonb_array_elements(value) e LOOP
                IF jsonb_typeof(element) = 'string' THEN
                    words := words || ' ' || (element #>> '{}');
                END IF;
            END LOOP;
        END IF;
    END LOOP;
    RETURN to_tsvector('simple'::regconfig, public.unaccent('public.unaccent'::regdictionary, left(words, 200000)));
END
$$;

-- `@@` again, LEAKPROOF (text search matching raises no error on any
-- input), with a GIN operator class of its own: the built-in `@@` is not
-- leakproof, so under row-level security its index would go unused.
CREATE OR REPLACE FUNCTION canopy.words_match(tsvector, tsquery) RETURNS boolean
    LANGUAGE internal IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE AS 'ts_match_vq';

-- Operators and operator classes cannot be replaced: created when missing.
DO $do$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_operator
                    WHERE oprname = '@@' AND oprnamespace = 'canopy'::regnamespace
                      AND oprleft = 'tsvector'::regtype AND oprright = 'tsquery'::regtype) THEN
        CREATE OPERATOR canopy.@@ (LEFTARG = tsvector, RIGHTARG = tsquery, FUNCTION = canopy.words_match,
                                   RESTRICT = tsmatchsel, JOIN = tsmatchjoinsel);
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_opclass
                    WHERE opcname = 'search_words_ops' AND opcnamespace = 'canopy'::regnamespace
                      AND opcmethod = (SELECT oid FROM pg_am WHERE amname = 'gin')) THEN
        CREATE OPERATOR CLASS canopy.search_words_ops FOR TYPE tsvector USING gin AS
            OPERATOR 1 canopy.@@ (tsvector, tsquery),
            FUNCTION 1 gin_cmp_tslexeme(text, text),
            FUNCTION 2 gin_extract_tsvector(tsvector, internal, internal),
            FUNCTION 3 gin_extract_tsquery(tsvector, internal, int2, internal, internal, internal, internal),
            FUNCTION 4 gin_tsquery_consistent(internal, int2, tsvector, int4, internal, internal, internal, internal),
            FUNCTION 5 gin_cmp_prefix(text, text, int2, internal),
            FUNCTION 6 gin_tsquery_triconsistent(internal, int2, tsvector, int4, internal, internal, internal),
            STORAGE text;
    END IF;
END
$do$;

-- LIST<STRING> and LIST<REFERENCE> field values as text[] (strings, and
-- references' record names), for CONTAINS on a QUERYABLE list; and `@>`
-- again, LEAKPROOF (array containment of two text[] raises no error), with
-- a GIN operator class of its own, for the same reason as `canopy.@@`
-- (estimated with the generic contsel: arraycontsel refuses operators it
-- does not know).
CREATE OR REPLACE FUNCTION canopy.text_list_field(p_fields jsonb, p_name text) RETURNS text[]
    LANGUAGE plpgsql IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE
AS $$
DECLARE
    value jsonb := p_fields -> p_name;
    element jsonb;
    items text[] := '{}';
BEGIN
    IF jsonb_typeof(value) <> 'array' THEN
        RETURN NULL;
    END IF;
    FOR element IN SELECT e FROM jsonb_array_elements(value) e LOOP
        IF jsonb_typeof(element) = 'string' THEN
            items := items || (element #>> '{}');
        ELSIF jsonb_typeof(element) = 'object' AND element ->> 'type' = 'REFERENCE' AND jsonb_typeof(element -> 'recordName') = 'string' THEN
            items := items || (element ->> 'recordName');
        END IF;
    END LOOP;
    RETURN items;
END
$$;

CREATE OR REPLACE FUNCTION canopy.text_list_contains(text[], text[]) RETURNS boolean
    LANGUAGE internal IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE AS 'arraycontains';

DO $do$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_operator
                    WHERE oprname = '@>' AND oprnamespace = 'canopy'::regnamespace
                      AND oprleft = 'text[]'::regtype AND oprright = 'text[]'::regtype) THEN
        CREATE OPERATOR canopy.@> (LEFTARG = text[], RIGHTARG = text[], FUNCTION = canopy.text_list_contains,
                                   RESTRICT = contsel, JOIN = contjoinsel);
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_opclass
                    WHERE opcname = 'text_list_ops' AND opcnamespace = 'canopy'::regnamespace
                      AND opcmethod = (SELECT oid FROM pg_am WHERE amname = 'gin')) THEN
        CREATE OPERATOR CLASS canopy.text_list_ops FOR TYPE text[] USING gin AS
            OPERATOR 2 canopy.@> (text[], text[]),
            FUNCTION 1 bttextcmp(text, text),
            FUNCTION 2 ginarrayextract(anyarray, internal, internal),
            FUNCTION 3 ginqueryarrayextract(anyarray, internal, int2, internal, internal, internal, internal),
            FUNCTION 4 ginarrayconsistent(internal, int2, anyarray, int4, internal, internal, internal, internal),
            FUNCTION 6 ginarraytriconsistent(internal, int2, anyarray, int4, internal, internal, internal),
            STORAGE text;
    END IF;
END
$do$;

ALTER FUNCTION canopy.json_number(jsonb) OWNER TO canopy_owner;
ALTER FUNCTION canopy.text_list_field(jsonb, text) OWNER TO canopy_owner;
ALTER FUNCTION canopy.text_list_contains(text[], text[]) OWNER TO canopy_owner;
ALTER OPERATOR canopy.@> (text[], text[]) OWNER TO canopy_owner;
ALTER OPERATOR CLASS canopy.text_list_ops USING gin OWNER TO canopy_owner;
ALTER OPERATOR FAMILY canopy.text_list_ops USING gin OWNER TO canopy_owner;
ALTER FUNCTION canopy.string_field(jsonb, text) OWNER TO canopy_owner;
ALTER FUNCTION canopy.number_field(jsonb, text) OWNER TO canopy_owner;
ALTER FUNCTION canopy.timestamp_field(jsonb, text) OWNER TO canopy_owner;
ALTER FUNCTION canopy.reference_field(jsonb, text) OWNER TO canopy_owner;
ALTER FUNCTION canopy.boolean_field(jsonb, text) OWNER TO canopy_owner;
ALTER FUNCTION canopy.epoch_ms(timestamptz) OWNER TO canopy_owner;
ALTER FUNCTION canopy.search_words(jsonb, text[]) OWNER TO canopy_owner;
ALTER FUNCTION canopy.words_match(tsvector, tsquery) OWNER TO canopy_owner;
ALTER OPERATOR canopy.@@ (tsvector, tsquery) OWNER TO canopy_owner;
ALTER OPERATOR CLASS canopy.search_words_ops USING gin OWNER TO canopy_owner;
ALTER OPERATOR FAMILY canopy.search_words_ops USING gin OWNER TO canopy_owner;

REVOKE ALL ON FUNCTION canopy.json_number(jsonb) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.string_field(jsonb, text) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.number_field(jsonb, text) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.timestamp_field(jsonb, text) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.reference_field(jsonb, text) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.boolean_field(jsonb, text) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.epoch_ms(timestamptz) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.search_words(jsonb, text[]) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.words_match(tsvector, tsquery) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.text_list_field(jsonb, text) FROM PUBLIC, canopy_gateway;
REVOKE ALL ON FUNCTION canopy.text_list_contains(text[], text[]) FROM PUBLIC, canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.json_number(jsonb) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.string_field(jsonb, text) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.number_field(jsonb, text) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.timestamp_field(jsonb, text) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.reference_field(jsonb, text) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.boolean_field(jsonb, text) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.epoch_ms(timestamptz) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.search_words(jsonb, text[]) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.words_match(tsvector, tsquery) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.text_list_field(jsonb, text) TO canopy_gateway;
GRANT EXECUTE ON FUNCTION canopy.text_list_contains(text[], text[]) TO canopy_gateway;
