import CanopyPlanner
import CanopyTestSupport
import Foundation
import Testing

/// CloudKit's schema language: real-world-shaped files parse and print back
/// in one canonical form; broken ones fail at the line and column of the fault.
@Suite("The schema language")
struct SchemaLanguageTests {
    /// Shaped like `cktool export-schema` output: every type, lists, grants,
    /// system fields, quoted names, all three kinds of comment.
    static let exported = """
        // Exported from CloudKit: iCloud.com.example.fasting, development
        DEFINE SCHEMA

            RECORD TYPE Users (
                "___createTime" TIMESTAMP,
                "___createdBy"  REFERENCE,
                "___etag"       STRING,
                "___modTime"    TIMESTAMP,
                "___modifiedBy" REFERENCE,
                "___recordID"   REFERENCE QUERYABLE,
                roles           LIST<INT64>,
                GRANT WRITE TO "_creator",
                GRANT READ TO "_world"
            );

            /* every field type */
            RECORD TYPE Fast (
                "___createTime" TIMESTAMP QUERYABLE SORTABLE,
                "___recordID"   REFERENCE QUERYABLE,
                avatar          ASSET,
                blob            BYTES,
                done            BOOLEAN,
                endDate         TIMESTAMP QUERYABLE SORTABLE,  -- when it ended
                hours           INT64 QUERYABLE SORTABLE,
                note            STRING QUERYABLE SEARCHABLE SORTABLE,
                place           LOCATION QUERYABLE,
                "grant"         STRING,
                ratio           double,
                owner           REFERENCE QUERYABLE,
                tags            LIST<STRING> QUERYABLE SEARCHABLE,
                stamps          LIST<TIMESTAMP>,
                GRANT READ, WRITE, CREATE TO "_creator",
                GRANT CREATE TO "_icloud",
                grant read to "_world"
            );
        """

    static let canonical = """
        DEFINE SCHEMA

            RECORD TYPE Fast (
                "___recordID"   REFERENCE QUERYABLE,
                "___createTime" TIMESTAMP QUERYABLE SORTABLE,
                avatar          ASSET,
                blob            BYTES,
                done            BOOLEAN,
                endDate         TIMESTAMP QUERYABLE SORTABLE,
                "grant"         STRING,
                hours           INT64 QUERYABLE SORTABLE,
                note            STRING QUERYABLE SORTABLE SEARCHABLE,
                owner           REFERENCE QUERYABLE,
                place           LOCATION QUERYABLE,
                ratio           DOUBLE,
                stamps          LIST<TIMESTAMP>,
                tags            LIST<STRING> QUERYABLE SEARCHABLE,
                GRANT READ, WRITE, CREATE TO "_creator",
                GRANT CREATE TO "_icloud",
                GRANT READ TO "_world"
            );

            RECORD TYPE Users (
                "___recordID"   REFERENCE QUERYABLE,
                "___createTime" TIMESTAMP,
                "___modTime"    TIMESTAMP,
                "___createdBy"  REFERENCE,
                "___modifiedBy" REFERENCE,
                "___etag"       STRING,
                roles           LIST<INT64>,
                GRANT WRITE TO "_creator",
                GRANT READ TO "_world"
            );

        """

    @Test("a cktool-shaped file parses, prints canonically, and reparses to the same document")
    func golden() throws {
        let document = try RecordTypesParser.parse(Self.exported)
        #expect(document.recordTypes.map(\.name) == ["Users", "Fast"])
        let fast = try #require(document[recordType: "Fast"])
        #expect(fast[field: "tags"]?.schema == FieldSchema(type: .list(.string), queryable: true, searchable: true))
        #expect(fast[field: "grant"]?.schema.type == .string, "a quoted keyword is a field name")
        #expect(fast[field: "stamps"]?.schema.type == .list(.timestamp))
        #expect(fast.grants == [
            GrantDeclaration(privileges: [.read, .write, .create], role: "_creator"),
            GrantDeclaration(privileges: [.create], role: "_icloud"),
            GrantDeclaration(privileges: [.read], role: "_world"),
        ])
        let printed = RecordTypesPrinter.print(document)
        #expect(printed == Self.canonical)
        #expect(try RecordTypesParser.parse(printed) == document)
        #expect(RecordTypesPrinter.print(try RecordTypesParser.parse(printed)) == printed, "printing is a fixed point")
        #expect(try RecordTypesParser.parse("") == RecordTypesDocument(), "an empty file is an empty schema")
    }

    @Test("the seed apps' schema file parses", arguments: ["Server/schema/app.ckdb"])
    func seedFile(_ path: String) throws {
        let root = Repository.rootURL
        let text = try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
        let document = try RecordTypesParser.parse(text)
        #expect(Set(document.recordTypes.map(\.name)) == ["Fast", "Contact"])
        #expect(document[recordType: "Fast"]?[field: SystemField.recordID.rawValue]?.schema.queryable == true)
    }

    @Test("broken files fail at the fault's line and column", arguments: [
        ("RECORD TYPE A (x STRNG);", 1, 18, "unknown field type STRNG"),
        ("DEFINE SCHEMA\nRECORD TYPE A (\n  x STRING,\n  y INT64 QUERYABLE INDEXED\n);", 4, 21, "expected QUERYABLE, SORTABLE, SEARCHABLE"),
        ("RECORD TYPE A (x LIST<LIST<STRING>>);", 1, 23, "a LIST cannot hold lists"),
        ("RECORD TYPE A (x LIST<STRING);", 1, 29, "expected '>'"),
        ("RECORD TYPE A (x STRING", 1, 24, "expected ')'"),
        ("RECORD TYPE A (\"x STRING);", 1, 16, "never closed"),
        ("/* open\nRECORD TYPE A (x STRING);", 1, 1, "comment is never closed"),
        ("RECORD TYPE A (x STRING, x INT64);", 1, 26, "declared twice"),
        ("RECORD TYPE A (x STRING);\nRECORD TYPE A (y STRING);", 2, 1, "record type A is declared twice"),
        ("RECORD TYPE A (\"___recordID\" STRING);", 1, 16, "is REFERENCE, not STRING"),
        ("RECORD TYPE A (\"___secret\" STRING);", 1, 16, "not a system field"),
        ("RECORD TYPE A (9lives STRING);", 1, 16, "must be a letter"),
        ("RECORD TYPE 1A (x STRING);", 1, 13, "record type name"),
        ("RECORD TYPE A (n INT64 SEARCHABLE);", 1, 16, "only STRING and LIST<STRING>"),
        ("RECORD TYPE A (t LIST<STRING> SORTABLE);", 1, 16, "cannot be SORTABLE"),
        ("RECORD TYPE A (GRANT WRITE TO \"_world\");", 1, 31, "_world may only be granted READ"),
        ("RECORD TYPE A (GRANT READ TO \"Janitor\");", 1, 30, "declared by CREATE ROLE Janitor"),
        ("CREATE ROLE 9x;", 1, 13, "role name '9x'"),
        ("CREATE ROLE A; CREATE ROLE A;", 1, 16, "role A is declared twice"),
        ("RECORD TYPE A (GRANT DELETE TO \"_world\");", 1, 22, "expected READ, WRITE or CREATE"),
        ("RECORD TYPE A (x STRING) ; DROP ROLE x;", 1, 28, "expected RECORD TYPE or CREATE ROLE"),
        ("RECORD TYPE A (x STRING @);", 1, 25, "unexpected character '@'"),
        ("DEFINE TABLE", 1, 8, "expected SCHEMA"),
    ] as [(String, Int, Int, String)])
    func broken(_ source: String, _ line: Int, _ column: Int, _ message: String) throws {
        do {
            _ = try RecordTypesParser.parse(source)
            Issue.record("parsed: \(source)")
        } catch let error as QueryError {
            #expect(error.locations == [QueryError.Location(line: line, column: column)], "\(error.message)")
            #expect(error.message.contains(message), "\(error.message)")
        }
    }

    @Test("changes between schemas; production refuses drops, retypes and removed indexes, naming each")
    func changes() throws {
        let current = try RecordTypesParser.parse("""
            RECORD TYPE Fast (hours INT64 QUERYABLE, note STRING SEARCHABLE, mood STRING, GRANT READ TO "_world");
            RECORD TYPE Old (x STRING);
            """)
        let desired = try RecordTypesParser.parse("""
            RECORD TYPE Fast (hours INT64 SORTABLE, note STRING, mood INT64, endDate TIMESTAMP QUERYABLE, GRANT READ TO "_world");
            """)
        let changes = RecordTypesChanges.between(current: current, desired: desired)
        #expect(changes.changes.map(\.description) == [
            "add Fast.endDate TIMESTAMP QUERYABLE",
            "indexes of Fast.hours: QUERYABLE -> SORTABLE",
            "retype Fast.mood from STRING to INT64",
            "indexes of Fast.note: SEARCHABLE -> no indexes",
            "drop Old.x STRING",
        ])
        #expect(changes.refusals(in: .development).isEmpty)
        #expect(changes.refusals(in: .production) == [
            "Fast.hours would lose QUERYABLE: a production schema is additive only",
            "Fast.mood would change from STRING to INT64: a production schema is additive only",
            "Fast.note would lose SEARCHABLE: a production schema is additive only",
            "Old.x (STRING) would be dropped: a production schema is additive only",
        ])
        #expect(RecordTypesChanges.between(current: desired, desired: desired).isEmpty)
        let additive = RecordTypesChanges.between(current: current, desired: try RecordTypesParser.parse("""
            RECORD TYPE Fast (hours INT64 QUERYABLE SORTABLE, note STRING SEARCHABLE, mood STRING QUERYABLE, GRANT READ TO "_world");
            RECORD TYPE Old (x STRING, y BYTES);
            RECORD TYPE New (z STRING);
            """))
        #expect(additive.refusals(in: .production).isEmpty, "adding types, fields and indexes is allowed in production")
    }

    @Test("indexes are built on the very expressions the compiled filter uses")
    func indexExpressions() throws {
        let document = try RecordTypesParser.parse("""
            RECORD TYPE Fast ("___createTime" TIMESTAMP SORTABLE, "___recordID" REFERENCE QUERYABLE, endDate TIMESTAMP SORTABLE,
                              note STRING QUERYABLE SEARCHABLE, tags LIST<STRING> QUERYABLE SEARCHABLE, place LOCATION QUERYABLE,
                              counts LIST<INT64> QUERYABLE);
            """)
        let indexes = RecordTypeIndex.indexes(for: document)
        #expect(indexes.map(\.fieldName) == ["___createTime", "endDate", "note", "tags", "note"],
                "___recordID has its index; LOCATION has no order; only string and reference lists get one for CONTAINS")
        #expect(indexes.map(\.kind) == [.btree, .btree, .btree, .list, .search])
        #expect(indexes[3].definition.contains("USING gin (zone_id, \(PredicateSQL.textList("tags", qualifier: "")) canopy.text_list_ops)"))
        for (index, target) in zip(indexes.prefix(3), [CheckedPredicate.Target.creationDate, .field("endDate", .timestamp), .field("note", .string)]) {
            #expect(index.definition.contains("(\(PredicateSQL.expression(target, qualifier: "")))"), "\(index.definition)")
            #expect(index.definition.hasSuffix("WHERE record_type = 'Fast'"))
            #expect(index.definition.hasPrefix("CREATE INDEX \(index.name) ON canopy.records (zone_id, "))
        }
        #expect(indexes[4].definition.contains("canopy.search_words(fields, '{note,tags}'::text[]) canopy.search_words_ops"))
        #expect(Set(indexes.map(\.name)).count == 5, "names differ")
        #expect(RecordTypeIndex.indexes(for: document) == indexes, "names are stable")
    }
}
