import CanopyPlanner
import Testing

/// `canopy schema typescript`'s text: each field typed as CanopyJS reads it,
/// names TypeScript cannot take renamed, system fields left
/// out. (clients/js/test/typescript.test.js compiles the output with
/// `tsc --strict` and checks it against records read from a live gateway.)
@Suite("TypeScript declarations of a schema")
struct SchemaTypeScriptTests {
    static let schema = """
        DEFINE SCHEMA
            RECORD TYPE Location (
                "___recordID" REFERENCE QUERYABLE,
                name          STRING QUERYABLE,
                spot          LOCATION,
                counts        LIST<INT64>,
                photos        LIST<ASSET>,
                at            TIMESTAMP SORTABLE,
                flag          BOOLEAN,
                ratio         DOUBLE,
                blob          BYTES,
                owner         REFERENCE
            );
            RECORD TYPE TypedRecord ( code STRING );
            RECORD TYPE string ( value STRING );
        """

    @Test("every field type maps to the value CanopyJS reads; system fields are left out")
    func fields() throws {
        let text = RecordTypesTypeScript.declarations(try RecordTypesParser.parse(Self.schema), source: "test.ckdb")
        for line in [
            "  name?: string;",
            "  spot?: CanopyLocation;",
            "  counts?: Array<number | bigint>;",
            "  photos?: CanopyAsset[];",
            "  at?: Date;",
            "  flag?: boolean;",
            "  ratio?: number;",
            "  blob?: Uint8Array;",
            "  owner?: CanopyReference;",
            "  /** STRING QUERYABLE */",
        ] {
            #expect(text.contains(line + "\n"), "missing \(line) in\n\(text)")
        }
        #expect(!text.contains("___recordID"))
    }

    @Test("a record type named as an import or a TypeScript word gets another identifier, and RecordTypes keeps the real name")
    func names() throws {
        let text = RecordTypesTypeScript.declarations(try RecordTypesParser.parse(Self.schema), module: "/js/index.js", source: "test.ckdb")
        #expect(text.contains("export type LocationFields = {"))
        #expect(text.contains("export type Location = TypedRecord<\"Location\">;"))
        #expect(text.contains("export type TypedRecordRecord = TypedRecord<\"TypedRecord\">;"))
        #expect(text.contains("    \"TypedRecord\": TypedRecordRecordFields;"))
        #expect(text.contains("export type stringRecord = TypedRecord<\"string\">;"))
        #expect(text.contains("from \"/js/index.js\";"))
        #expect(text.contains("declare module \"/js/index.js\" {"))
    }
}
