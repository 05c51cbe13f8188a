-- Record-type schemas (issue 6; docs/RECORD_SCHEMAS.md): declared fields
-- with QUERYABLE, SORTABLE and SEARCHABLE indexes, grants kept as the
-- schema file wrote them, and production mode's refusal of undeclared
-- types and fields.
--
-- Why the indexes are on functions and not on generated columns: under
-- row-level security PostgreSQL uses a condition as an index condition only
-- when every function in it is LEAKPROOF (DESIGN.md principle 4), and no
-- JSONB operator or cast is. Each function below reads one typed value out
-- of `fields` and can raise no error whatever the data, so it is declared
-- LEAKPROOF; `canopy schema apply` builds expression indexes on them
-- (CREATE INDEX CONCURRENTLY, writers never blocked), and the query compiler
-- writes its conditions with the same functions. A generated column per
-- field would rewrite the whole table under an exclusive lock when added.
--
-- LEAKPROOF can only be granted by a superuser, so this part runs before
-- SET LOCAL ROLE; the functions are then handed to canopy_owner.

CREATE EXTENSION IF NOT EXISTS btree_gin WITH SCHEMA public;

-- A number from JSON as float8, or NULL. Numbers beyond float8's range
-- (JSON allows them) are NULL rather than an error.
CREATE FUNCTION canopy.json_number(p_value jsonb) RETURNS float8
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
CREATE FUNCTION canopy.string_field(p_fields jsonb, p_name text) RETURNS text
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

-- INT64 and DOUBLE field values as float8 (the predicate language compares numbers as float8).
CREATE FUNCTION canopy.number_field(p_fields jsonb, p_name text) RETURNS float8
    LANGUAGE plpgsql IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE
AS $$
BEGIN
    RETURN canopy.json_number(p_fields -> p_name);
END
$$;

-- TIMESTAMP field values as milliseconds since the epoch.
CREATE FUNCTION canopy.timestamp_field(p_fields jsonb, p_name text) RETURNS float8
    LANGUAGE plpgsql IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE
AS $$
DECLARE
    value jsonb := p_fields -> p_name;
BEGIN
    IF jsonb_typeof(value) = 'object' AND value ->> 'type' = 'TIMESTAMP' THEN
        RETURN canopy.json_number(value -> 'value');
    END IF;
    RETURN NULL;
END
$$;

-- REFERENCE field values as the record name they point to.
CREATE FUNCTION canopy.reference_field(p_fields jsonb, p_name text) RETURNS text
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
CREATE FUNCTION canopy.boolean_field(p_fields jsonb, p_name text) RETURNS boolean
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
CREATE FUNCTION canopy.epoch_ms(p_time timestamptz) RETURNS float8
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
CREATE FUNCTION canopy.search_words(p_fields jsonb, p_names text[]) RETURNS tsvector
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
CREATE FUNCTION canopy.words_match(tsvector, tsquery) RETURNS boolean
    LANGUAGE internal IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE AS 'ts_match_vq';
CREATE OPERATOR canopy.@@ (LEFTARG = tsvector, RIGHTARG = tsquery, FUNCTION = canopy.words_match,
                           RESTRICT = tsmatchsel, JOIN = tsmatchjoinsel);
CREATE OPERATOR CLASS canopy.search_words_ops FOR TYPE tsvector USING gin AS
    OPERATOR 1 canopy.@@ (tsvector, tsquery),
    FUNCTION 1 gin_cmp_tslexeme(text, text),
    FUNCTION 2 gin_extract_tsvector(tsvector, internal, internal),
    FUNCTION 3 gin_extract_tsquery(tsvector, internal, int2, internal, internal, internal, internal),
    FUNCTION 4 gin_tsquery_consistent(internal, int2, tsvector, int4, internal, internal, internal, internal),
    FUNCTION 5 gin_cmp_prefix(text, text, int2, internal),
    FUNCTION 6 gin_tsquery_triconsistent(internal, int2, tsvector, int4, internal, internal, internal),
    STORAGE text;

-- LIST<STRING> and LIST<REFERENCE> field values as text[] (strings, and
-- references' record names), for CONTAINS on a QUERYABLE list; and `@>`
-- again, LEAKPROOF (array containment of two text[] raises no error), with
-- a GIN operator class of its own, for the same reason as `canopy.@@`
-- (estimated with the generic contsel: arraycontsel refuses operators it
-- does not know).
CREATE FUNCTION canopy.text_list_field(p_fields jsonb, p_name text) RETURNS text[]
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
CREATE FUNCTION canopy.text_list_contains(text[], text[]) RETURNS boolean
    LANGUAGE internal IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE AS 'arraycontains';
CREATE OPERATOR canopy.@> (LEFTARG = text[], RIGHTARG = text[], FUNCTION = canopy.text_list_contains,
                           RESTRICT = contsel, JOIN = contjoinsel);
CREATE OPERATOR CLASS canopy.text_list_ops FOR TYPE text[] USING gin AS
    OPERATOR 2 canopy.@> (text[], text[]),
    FUNCTION 1 bttextcmp(text, text),
    FUNCTION 2 ginarrayextract(anyarray, internal, internal),
    FUNCTION 3 ginqueryarrayextract(anyarray, internal, int2, internal, internal, internal, internal),
    FUNCTION 4 ginarrayconsistent(internal, int2, anyarray, int4, internal, internal, internal, internal),
    FUNCTION 6 ginarraytriconsistent(internal, int2, anyarray, int4, internal, internal, internal),
    STORAGE text;

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

SET LOCAL ROLE canopy_owner;

-- Declared fields: the system fields a schema file lists (___recordID and
-- the like), ASSET, and each field's indexes.
ALTER TABLE canopy.field_types DROP CONSTRAINT field_types_field_name_check;
ALTER TABLE canopy.field_types ADD CONSTRAINT field_types_field_name_check
    CHECK (field_name ~ '^[A-Za-z][A-Za-z0-9_]{0,254}$' OR field_name IN ('___recordID', '___createTime', '___modTime', '___createdBy', '___modifiedBy', '___etag'));
ALTER TABLE canopy.field_types DROP CONSTRAINT field_types_field_type_check;
ALTER TABLE canopy.field_types ADD CONSTRAINT field_types_field_type_check
    CHECK (field_type ~ '^(LIST<)?(STRING|INT64|DOUBLE|BOOLEAN|TIMESTAMP|REFERENCE|LOCATION|BYTES|ASSET)>?$');
ALTER TABLE canopy.field_types
    ADD COLUMN queryable boolean NOT NULL DEFAULT false,
    ADD COLUMN sortable boolean NOT NULL DEFAULT false,
    ADD COLUMN searchable boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN canopy.field_types.field_name IS 'Field name, or one of CloudKit''s system fields (___recordID, ___createTime, ___modTime, ___createdBy, ___modifiedBy, ___etag) when a schema file declares them.';
COMMENT ON COLUMN canopy.field_types.field_type IS 'STRING, INT64, DOUBLE, BOOLEAN, TIMESTAMP, REFERENCE, LOCATION, BYTES, ASSET, or LIST<one of those>.';
COMMENT ON COLUMN canopy.field_types.queryable IS 'QUERYABLE: filters on the field run on an index (canopy schema apply builds it); required in production mode.';
COMMENT ON COLUMN canopy.field_types.sortable IS 'SORTABLE: sorts and range filters on the field run on an index; sorts require it in production mode.';
COMMENT ON COLUMN canopy.field_types.searchable IS 'SEARCHABLE: the field''s words are what self CONTAINS matches, on a full-text index.';

-- Grants as the schema file states them (GRANT READ TO "_world"), kept so
-- that `canopy schema export` gives them back. Canopy has no public
-- database: who reads what is decided by zones and shares, not by these.
CREATE TABLE canopy.record_type_grants (
    record_type text NOT NULL CHECK (record_type ~ '^[A-Za-z][A-Za-z0-9_]{0,254}$'),
    privilege   text NOT NULL CHECK (privilege IN ('READ', 'WRITE', 'CREATE')),
    role_name   text NOT NULL CHECK (length(role_name) BETWEEN 1 AND 255),
    position    int NOT NULL,
    PRIMARY KEY (record_type, privilege, role_name)
);
COMMENT ON TABLE canopy.record_type_grants IS 'GRANT clauses of the applied schema file, kept for export; not enforced (zones and shares decide access).';
COMMENT ON COLUMN canopy.record_type_grants.record_type IS 'recordType.';
COMMENT ON COLUMN canopy.record_type_grants.privilege IS 'READ, WRITE or CREATE.';
COMMENT ON COLUMN canopy.record_type_grants.role_name IS 'The security role named, e.g. _world, _icloud, _creator.';
COMMENT ON COLUMN canopy.record_type_grants.position IS 'Order within the record type, as written.';
ALTER TABLE canopy.record_type_grants ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.record_type_grants FORCE ROW LEVEL SECURITY;
CREATE POLICY canopy_owner_all ON canopy.record_type_grants TO canopy_owner USING (true) WITH CHECK (true);

-- The indexes `canopy schema apply` keeps on canopy.records. A row is
-- written before its index is built, so an apply that stops half-way
-- leaves a row whose index is missing or invalid, and the next apply
-- builds it again.
CREATE TABLE canopy.schema_indexes (
    index_name  text PRIMARY KEY CHECK (index_name ~ '^records_schema_[0-9a-f]{16}$'),
    record_type text NOT NULL,
    field_name  text NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('btree', 'search', 'list')),
    definition  text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (record_type, field_name, kind)
);
COMMENT ON TABLE canopy.schema_indexes IS 'Indexes on canopy.records that canopy schema apply built for QUERYABLE, SORTABLE and SEARCHABLE fields.';
COMMENT ON COLUMN canopy.schema_indexes.index_name IS 'records_schema_ and 16 hex digits of the definition''s hash.';
COMMENT ON COLUMN canopy.schema_indexes.record_type IS 'recordType.';
COMMENT ON COLUMN canopy.schema_indexes.field_name IS 'Field (or system field) indexed; for search, the first SEARCHABLE field.';
COMMENT ON COLUMN canopy.schema_indexes.kind IS 'btree (QUERYABLE, SORTABLE), list (a QUERYABLE LIST<STRING> or LIST<REFERENCE>, for CONTAINS) or search (SEARCHABLE, one per record type over all its SEARCHABLE fields).';
COMMENT ON COLUMN canopy.schema_indexes.definition IS 'The CREATE INDEX statement, without CONCURRENTLY.';
COMMENT ON COLUMN canopy.schema_indexes.created_at IS 'When apply first asked for it.';
ALTER TABLE canopy.schema_indexes ENABLE ROW LEVEL SECURITY;
ALTER TABLE canopy.schema_indexes FORCE ROW LEVEL SECURITY;
CREATE POLICY canopy_owner_all ON canopy.schema_indexes TO canopy_owner USING (true) WITH CHECK (true);

-- Production mode (canopy serve --mode production sets canopy.schema_mode
-- for its write transactions): a saved record's type and every field must
-- be declared. Named to fire before records_check_fields, which would
-- otherwise fix the type of a new field.
CREATE FUNCTION canopy.records_check_declared() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    key text;
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.fields = OLD.fields AND NEW.record_type = OLD.record_type THEN
        RETURN NEW;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM canopy.field_types WHERE record_type = NEW.record_type) THEN
        RAISE EXCEPTION 'record type % is not in the schema (production mode: declare it and run canopy schema apply)', NEW.record_type
            USING ERRCODE = 'CN004';
    END IF;
    FOR key IN SELECT jsonb_object_keys(NEW.fields) LOOP
        IF NOT EXISTS (SELECT 1 FROM canopy.field_types WHERE record_type = NEW.record_type AND field_name = key) THEN
            RAISE EXCEPTION 'field % is not in record type %''s schema (production mode: declare it and run canopy schema apply)', left(key, 300), NEW.record_type
                USING ERRCODE = 'CN004';
        END IF;
    END LOOP;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION canopy.records_check_declared() IS 'Production mode: refuses saves of undeclared record types and fields.';
CREATE TRIGGER records_check_declared BEFORE INSERT OR UPDATE ON canopy.records
    FOR EACH ROW WHEN (current_setting('canopy.schema_mode', true) = 'production')
    EXECUTE FUNCTION canopy.records_check_declared();

REVOKE ALL ON FUNCTION canopy.json_number(jsonb), canopy.string_field(jsonb, text), canopy.number_field(jsonb, text),
    canopy.timestamp_field(jsonb, text), canopy.reference_field(jsonb, text), canopy.boolean_field(jsonb, text),
    canopy.epoch_ms(timestamptz), canopy.search_words(jsonb, text[]), canopy.words_match(tsvector, tsquery),
    canopy.text_list_field(jsonb, text), canopy.text_list_contains(text[], text[]),
    canopy.records_check_declared() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION canopy.json_number(jsonb), canopy.string_field(jsonb, text), canopy.number_field(jsonb, text),
    canopy.timestamp_field(jsonb, text), canopy.reference_field(jsonb, text), canopy.boolean_field(jsonb, text),
    canopy.epoch_ms(timestamptz), canopy.search_words(jsonb, text[]), canopy.words_match(tsvector, tsquery),
    canopy.text_list_field(jsonb, text), canopy.text_list_contains(text[], text[])
    TO canopy_gateway;
