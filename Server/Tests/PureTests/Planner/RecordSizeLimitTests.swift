@testable import CanopyPlanner
import Testing

/// A record's fields may take 1 MB of JSON text (docs/API.md). The check
/// measures a bound first and writes the text only when the bound does not
/// clear it (issue 39), so the bound must never be below the text.
@Suite("The 1 MB limit of a record's fields")
struct RecordSizeLimitTests {
    @Test("the bound is never below the written text", arguments: [
        JSONValue.null, .bool(false), .int(Int64.min), .double(-1.2345678901234567e-300), .double(1e20),
        .string(""), .string("\u{0}\u{1}\"\\\n\u{1F}é😀"), .array([.int(1), .string("x"), .null, .array([])]),
        .object(["a": .string("\u{7}"), "é": .object(["n": .double(0.5)]), "list": .array([.bool(true)])]),
    ])
    func boundHolds(_ value: JSONValue) {
        #expect(JSONWriter.sizeBound(of: value) >= value.jsonText.utf8.count)
    }

    @Test("fields of exactly 1 MB are saved, one byte more is refused, escapes counted as written")
    func limit() {
        func record(_ note: String) -> RecordSave {
            RecordSave(recordName: "r", recordType: "Note", fields: ["note": .string(note)])
        }
        let overhead = #"{"note":""}"#.utf8.count
        let limit = ModifyRecordsPlan.maximumFieldsBytes
        // Control characters are written as \u00XX: six bytes each.
        let escaped = String(repeating: "\u{1}", count: 1000)
        let fill = limit - overhead - 6000
        #expect(ModifyRecordsPlan.problem(with: record(escaped + String(repeating: "a", count: fill))) == nil)
        let refused = ModifyRecordsPlan.problem(with: record(escaped + String(repeating: "a", count: fill + 1)))
        #expect(refused?.contains("larger than the limit of 1 MB") == true)
    }
}
