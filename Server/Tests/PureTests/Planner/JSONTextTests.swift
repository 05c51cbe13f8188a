import CanopyPlanner
import Foundation
import Testing

@Suite("Reading and writing JSON text")
struct JSONTextTests {
    @Test("values parse to what the client wrote: integers stay integers, a fraction or exponent makes a double")
    func values() throws {
        let text = #" { "i": 42, "n": -7, "zero": -0, "d": 5.0, "e": 1e3, "f": -2.5E-2, "t": true, "no": false, "nil": null, "# +
            #""s": "a\"b\\c\/d\n\t\u00e9\ud83d\ude00", "raw": "é😀", "l": [1, [], {}, "x"], "max": 9223372036854775807, "#  +
            #""min": -9223372036854775808, "over": 9223372036854775808 } "#
        let value = try JSONValue(parsing: text)
        let expected: JSONValue = .object([
            "i": .int(42), "n": .int(-7), "zero": .int(0), "d": .double(5), "e": .double(1000), "f": .double(-0.025),
            "t": .bool(true), "no": .bool(false), "nil": .null, "s": .string("a\"b\\c/d\n\té😀"), "raw": .string("é😀"),
            "l": .array([.int(1), .array([]), .object([:]), .string("x")]), "max": .int(.max), "min": .int(.min),
            "over": .double(9223372036854775808),
        ])
        #expect(value == expected)
    }

    @Test("bad JSON is refused at the line and column of the first byte that does not fit",
          arguments: [
              ("{\"a\": 1,\n \"b\": tru}", "expected a JSON value at line 2, column 7"),
              ("[1, 2,]", "expected a JSON value at line 1, column 7"),
              ("{\"a\" 1}", "expected ':' after an object key at line 1, column 6"),
              ("{\"a\": 1 \"b\": 2}", "expected ',' or '}' in an object at line 1, column 9"),
              ("{a: 1}", "expected a string key at line 1, column 2"),
              ("[01]", "a number cannot start with 0 followed by digits at line 1, column 3"),
              ("[1.]", "expected a digit after '.' at line 1, column 4"),
              ("[1e]", "expected a digit in the exponent at line 1, column 4"),
              ("[-]", "expected a digit at line 1, column 3"),
              ("[1e999]", "the number is out of range at line 1, column 2"),
              ("\"a\tb\"", "a control character must be escaped in a string at line 1, column 3"),
              ("\"a\\qb\"", "unknown escape in a string at line 1, column 3"),
              ("\"\\ud83d\"", "a \\u escape holds half of a surrogate pair at line 1, column 2"),
              ("\"\\u12g4\"", "a \\u escape needs four hex digits at line 1, column 6"),
              ("\"abc", "the JSON text ends inside a string at line 1, column 5"),
              ("{\"a\": 1} x", "unexpected text after the JSON value at line 1, column 10"),
              ("", "the JSON text ends where a value was expected at line 1, column 1"),
              ("  é", "expected a JSON value at line 1, column 3"),
          ])
    func refused(text: String, message: String) {
        #expect(throws: QueryError(.badRequest, "\(message) of the JSON")) { try JSONValue(parsing: text) }
    }

    @Test("bytes that are not UTF-8, and nesting past 512 levels, are refused")
    func hostile() throws {
        let invalid: [UInt8] = Array("[\"ab".utf8) + [0xFF, 0xFE] + Array("\"]".utf8)
        #expect(throws: QueryError(.badRequest, "a string is not valid UTF-8 at line 1, column 3 of the JSON")) {
            try invalid.withUnsafeBytes { try JSONValue(parsing: $0) }
        }
        let deep = String(repeating: "[", count: 513) + String(repeating: "]", count: 513)
        #expect(throws: QueryError(.badRequest, "the JSON nests deeper than 512 levels at line 1, column 513 of the JSON")) {
            try JSONValue(parsing: deep)
        }
        let deepest = String(repeating: "[", count: 512) + String(repeating: "]", count: 512)
        #expect(throws: Never.self) { try JSONValue(parsing: deepest) }
    }

    @Test("text is compact with sorted keys, escaped as JSONEncoder escapes it, and doubles keep their fraction")
    func writes() throws {
        let value: JSONValue = .object(["b": .array([.int(1), .double(5), .double(0.5), .double(1e20), .null, .bool(false)]),
                                        "a": .string("q\"\\/\u{1}\u{8}\u{c}\n\r\t\u{1f}\u{7f}é😀")])
        #expect(value.jsonText == #"{"a":"q\"\\/\u0001\b\f\n\r\t\u001f"# + "\u{7f}é😀" + #"","b":[1,5.0,0.5,100000000000000000000.0,null,false]}"#)
        // The string escapes are JSONEncoder's, byte for byte.
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let strings = ["plain", "q\"\\/\u{1}\u{8}\u{c}\n\r\t\u{1f}\u{7f}é😀", "\u{0}x\u{10}"]
        #expect(String(decoding: try encoder.encode(strings), as: UTF8.self) == JSONValue.array(strings.map(JSONValue.string)).jsonText)
        #expect(try JSONValue(parsing: value.jsonText) == value)
    }
}
