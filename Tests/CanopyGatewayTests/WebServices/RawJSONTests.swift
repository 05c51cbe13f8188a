@testable import CanopyGateway
import CanopyPlanner
import Testing

/// The byte reader Web Services answers are written from: it must find
/// every member and element of whatever PostgreSQL writes, strings with
/// escapes and nesting included, and write what a parse-and-write would.
@Suite("RawJSON")
struct RawJSONTests {
    @Test("members and elements of nested values, with escapes, spaces and scalars at every position")
    func reads() throws {
        let text = #" {"a": 1, "b":"x\"}],{y", "c" : [1, "2", {"d": [true, null]}, -3.5e2], "e":{}, "f":[], "g":null} "#
        let json = RawJSON(text)
        let members = json.members(json.root)
        #expect(members.map { json.key($0) } == ["a", "b", "c", "e", "f", "g"])
        #expect(members.map { json.text($0.value) } == ["1", #""x\"}],{y""#, #"[1, "2", {"d": [true, null]}, -3.5e2]"#, "{}", "[]", "null"])
        #expect(json.string(members[1].value) == "x\"}],{y")
        let elements = json.elements(members[2].value)
        #expect(elements.map { json.text($0) } == ["1", #""2""#, #"{"d": [true, null]}"#, "-3.5e2"])
        #expect(json.members(elements[2]).map { json.key($0) } == ["d"] && json.elements(json.members(elements[2])[0].value).map { json.text($0) } == ["true", "null"])
        #expect(json.value(of: "c", in: members) == members[2].value && json.value(of: "z", in: members) == nil)
        #expect(json.elements(members[4].value).isEmpty && json.members(members[3].value).isEmpty)
    }

    @Test("a record written from bytes is the record written from its parse")
    func sameAsParsed() throws {
        let record = #"{"recordName":"r\"1","recordType":"T","recordChangeTag":"3","parent":"p","fields":{"s":"é","i":42,"d":2.5,"b":true,"t":{"type":"TIMESTAMP","value":5},"l":[1,2],"r":{"type":"REFERENCE","recordName":"x","action":"DELETE_SELF"},"loc":{"type":"LOCATION","latitude":1.5,"longitude":2},"by":{"type":"BYTES","base64":"AA=="},"as":{"type":"ASSET","sha256":"ab","size":3,"contentType":"image/png","downloadURL":"http://x/a?b=1"},"tl":[{"type":"TIMESTAMP","value":1}],"e":[]},"created":{"timestamp":1700000000000,"userRecordName":"_u"},"modified":{"timestamp":1700000000001,"userRecordName":"_u"},"share":{"rootRecordName":"r\"1"}}"#
        let json = RawJSON(record)
        var out: [UInt8] = []
        let zoneID = #"{"zoneName":"Z"}"#
        WebServicesRecordText.append(json, record: json.root, zoneID: Array(zoneID.utf8), schemas: [:], numbersAsStrings: false, to: &out)
        let written = try JSONValue(parsing: String(decoding: out, as: UTF8.self))
        let expected = WebServicesRecord.dictionary(try JSONValue(parsing: record), zoneID: try JSONValue(parsing: zoneID), schemas: [:], numbersAsStrings: false)
        #expect(written == expected, "\(written.jsonText)\n\(expected.jsonText)")
    }
}
