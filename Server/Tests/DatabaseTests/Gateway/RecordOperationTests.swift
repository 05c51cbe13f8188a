@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyGateway
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HTTPTypes
import HummingbirdTesting
import PostgresNIO
import Testing

@Suite("Zones, records, lookups and modifications over HTTP")
struct RecordOperationTests {
    @Test("zones: save (idempotent), list, delete; bad names and unknown zones are located errors")
    func zones() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let token = harness.aliceToken
            let first = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Fasting\") { zoneName ownerName } }", token: token)
            #expect(first.object["zoneName"] as? String == "Fasting")
            #expect(first.object["ownerName"] as? String == harness.alice.userRecordName)
            let again = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Fasting\") { zoneName } }", token: token)
            #expect(again.object["zoneName"] as? String == "Fasting")
            let zones = try await client.call("zones", "{ zones(scope: PRIVATE) { zoneName } }", token: token)
            #expect(zones.list.compactMap { $0["zoneName"] as? String } == ["Fasting", "_defaultZone"])
            #expect(try await client.call("zones", "{ zones(scope: SHARED) { zoneName } }", token: token).list.isEmpty)
            #expect(try await client.call("zones", "{ zones(scope: PRIVATE) { zoneName } }", token: harness.bobToken).list.count == 1, "bob sees only his own")

            let bad = try await client.call("saveZone", "mutation { saveZone(zoneName: \"_secret\") { zoneName } }", token: token)
            #expect(bad.code == "INVALID_ARGUMENTS")
            #expect((firstError(bad.body)["locations"] as? [[String: Int]])?.first == ["line": 1, "column": 31])

            let deleteDefault = try await client.call("deleteZone", "mutation { deleteZone(scope: PRIVATE, zone: {zoneName: \"_defaultZone\"}) }", token: token)
            #expect(deleteDefault.code == "INVALID_ARGUMENTS")
            let unknown = try await client.call("deleteZone", "mutation { deleteZone(scope: PRIVATE, zone: {zoneName: \"Nope\"}) }", token: token)
            #expect(unknown.code == "ZONE_NOT_FOUND")
            // Another user's zone looks exactly like one that does not exist.
            let others = try await client.call("deleteZone", "mutation { deleteZone(scope: SHARED, zone: {zoneName: \"Fasting\", ownerName: \"\(harness.alice.userRecordName)\"}) }", token: harness.bobToken)
            #expect(others.code == "ZONE_NOT_FOUND")
            #expect(others.message == unknown.message)
            let deleted = try await client.call("deleteZone", "mutation { deleteZone(scope: PRIVATE, zone: {zoneName: \"Fasting\"}) }", token: token)
            #expect(deleted.data as? Bool == true)
        }
    }

    @Test("modifyRecords: create, save with the tag, conflicts return the server record, policies merge or replace")
    func savePolicies() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let token = harness.aliceToken
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Fasting\") { zoneName } }", token: token)
            let created = try await save(client, token: token, [fast("f1", hours: 16, end: 1_700_000_000_000)])
            let tag = try #require(created.first?["recordChangeTag"] as? String)

            // No tag for an existing record, or a stale one: SERVER_RECORD_CHANGED with the server's record.
            let conflict = try await client.call("modifyRecords", """
                mutation($s: [RecordInput!]) { modifyRecords(scope: PRIVATE, zone: {zoneName: "Fasting"}, save: $s) {
                  saved { recordName } errors { recordName code serverRecord { recordChangeTag fields } } } }
                """, ["s": [fast("f1", hours: 18, end: 1_700_000_000_000, tag: "stale")]], token: token)
            let error = try #require((conflict.object["errors"] as? [[String: Any]])?.first)
            #expect(error["code"] as? String == "SERVER_RECORD_CHANGED")
            #expect((error["serverRecord"] as? [String: Any])?["recordChangeTag"] as? String == tag)
            #expect(((error["serverRecord"] as? [String: Any])?["fields"] as? [String: Any])?["hours"] as? Int == 16)

            let updated = try await save(client, token: token, [fast("f1", hours: 18, end: 1_700_000_000_000, tag: tag)])
            let newTag = try #require(updated.first?["recordChangeTag"] as? String)
            #expect(newTag != tag)

            // CHANGED_KEYS merges; null removes a key. ALL_KEYS replaces.
            let merged = try await save(client, token: token, [["recordName": "f1", "recordType": "Fast", "fields": ["mood": "good", "note": NSNull()]]], policy: "CHANGED_KEYS")
            let mergedFields = merged.first?["fields"] as? [String: Any]
            #expect(mergedFields?["hours"] as? Int == 18)
            #expect(mergedFields?["mood"] as? String == "good")
            #expect(mergedFields?["note"] == nil)
            let replaced = try await save(client, token: token, [["recordName": "f1", "recordType": "Fast", "fields": ["hours": 20]]], policy: "ALL_KEYS")
            #expect((replaced.first?["fields"] as? [String: Any])?.keys.sorted() == ["hours"])
        }
    }

    @Test("a batch of new records is written in one statement: in order, stamped, typed; one bad record falls back and is named")
    func newRecordsTogether() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let token = harness.aliceToken
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Bulk\") { zoneName } }", token: token)
            let query = """
                mutation($s: [RecordInput!], $a: Boolean) { modifyRecords(scope: PRIVATE, zone: {zoneName: "Bulk"}, save: $s, atomic: $a) {
                  saved { recordName recordChangeTag fields created { userRecordName } modified { userRecordName } } errors { recordName code message } } }
                """
            // Names out of alphabetical order, and a field type fixed by this batch.
            let names = (0..<400).map { "b\((($0 * 7919) % 400))" }
            let batch: [[String: Any]] = names.enumerated().map { index, name in
                ["recordName": name, "recordType": "Tally",
                 "fields": ["count": index, "label": "tally \(index)", "tags": ["t\(index % 3)"], "ratio": 0.5,
                            "at": ["type": "TIMESTAMP", "value": 1_700_000_000_000 + index]]]
            }
            let answer = try await client.call("modifyRecords", query, ["s": batch], token: token)
            #expect((answer.object["errors"] as? [Any])?.isEmpty == true, "\(answer.body)")
            let saved = answer.object["saved"] as? [[String: Any]] ?? []
            #expect(saved.compactMap { $0["recordName"] as? String } == names, "saved in the order sent")
            let tags = saved.compactMap { ($0["recordChangeTag"] as? String).flatMap { Int($0, radix: 16) } }
            #expect(tags.count == 400 && zip(tags, tags.dropFirst()).allSatisfy { $0 < $1 }, "change tags follow the batch's order")
            #expect(saved.allSatisfy { ($0["created"] as? [String: Any])?["userRecordName"] as? String == harness.alice.userRecordName
                                       && ($0["modified"] as? [String: Any])?["userRecordName"] as? String == harness.alice.userRecordName })
            #expect((saved.last?["fields"] as? [String: Any])?["label"] as? String == "tally 399")
            let types = try await TestDatabase.withConnection(harness.endpoint) { connection in
                try await connection.texts("SELECT field_name || ' ' || field_type FROM canopy.field_types WHERE record_type = 'Tally' ORDER BY 1")
            }
            #expect(types == ["at TIMESTAMP", "count INT64", "label STRING", "ratio DOUBLE", "tags LIST<STRING>"])

            // One record of a new batch breaks the type the first batch fixed:
            // atomic, it alone is named and nothing is written; not atomic, the rest are saved.
            let second: [[String: Any]] = (0..<50).map { index in
                ["recordName": "c\(index)", "recordType": "Tally",
                 "fields": ["count": index == 17 ? "seventeen" : index as Any, "label": "second \(index)"]]
            }
            let atomic = try await client.call("modifyRecords", query, ["s": second, "a": true], token: token)
            let errors = atomic.object["errors"] as? [[String: Any]] ?? []
            #expect(errors.filter { $0["code"] as? String != "BATCH_REQUEST_FAILED" }.compactMap { $0["recordName"] as? String } == ["c17"])
            #expect(errors.first { $0["recordName"] as? String == "c17" }?["code"] as? String == "INVALID_ARGUMENTS")
            #expect(errors.contains { $0["recordName"] as? String == "c17" && ($0["message"] as? String)?.contains("count") == true },
                    "the failure names the field")
            let partial = try await client.call("modifyRecords", query, ["s": second, "a": false], token: token)
            #expect((partial.object["saved"] as? [[String: Any]])?.count == 49)
            #expect((partial.object["errors"] as? [[String: Any]])?.compactMap { $0["recordName"] as? String } == ["c17"])

            // A name that exists already: the batch goes record by record and that one conflicts.
            let third: [[String: Any]] = [["recordName": "d1", "recordType": "Tally", "fields": ["count": 1]],
                                          ["recordName": "b0", "recordType": "Tally", "fields": ["count": 2]],
                                          ["recordName": "d2", "recordType": "Tally", "fields": ["count": 3]]]
            let conflict = try await client.call("modifyRecords", query, ["s": third, "a": false], token: token)
            #expect((conflict.object["saved"] as? [[String: Any]])?.compactMap { $0["recordName"] as? String } == ["d1", "d2"])
            #expect((conflict.object["errors"] as? [[String: Any]])?.first?["code"] as? String == "SERVER_RECORD_CHANGED")
            let count = try await TestDatabase.withConnection(harness.endpoint) { connection in
                try await connection.texts("SELECT count(*)::text FROM canopy.records r JOIN canopy.zones z ON z.owner_id = r.owner_id AND z.id = r.zone_id WHERE z.name = 'Bulk' AND z.owner_id = \(harness.alice.id)")
            }
            #expect(count == ["451"])
        }
    }

    @Test("a number written with a fraction or exponent is a DOUBLE even when whole, one without is an INT64, as sent")
    func numberTypes() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let token = harness.aliceToken
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Fasting\") { zoneName } }", token: token)
            // Raw bodies: a Swift client's JSONSerialization would write 70.0 as 70.
            func modify(_ saves: String) async throws -> [String: Any] {
                let body = #"{"query": "mutation($s: [RecordInput!]) { modifyRecords(scope: PRIVATE, zone: {zoneName: \"Fasting\"}, "#
                    + #"save: $s, atomic: false) { saved { recordName fields } errors { recordName code message } } }", "variables": {"s": "#
                    + saves + "}}"
                let (status, answer) = try await client.post(body: ByteBuffer(string: body), token: token)
                #expect(status == .ok, "\(answer)")
                return (answer["data"] as? [String: Any])?["modifyRecords"] as? [String: Any] ?? [:]
            }
            let first = try await modify(#"[{"recordName": "w1", "recordType": "Weighing", "fields": {"kilograms": 70.0, "steps": 8000, "scale": 1e2}}]"#)
            #expect((first["errors"] as? [Any])?.isEmpty == true, "\(first)")
            let types = try await TestDatabase.withConnection(harness.endpoint) { connection in
                try await connection.texts("SELECT field_name || ' ' || field_type FROM canopy.field_types WHERE record_type = 'Weighing' ORDER BY 1")
            }
            #expect(types == ["kilograms DOUBLE", "scale DOUBLE", "steps INT64"])
            let fields = (first["saved"] as? [[String: Any]])?.first?["fields"] as? [String: Any]
            #expect(fields?["kilograms"] as? Double == 70 && fields?["steps"] as? Int == 8000)

            // A whole number fits a DOUBLE field; a fraction does not fit an INT64 one.
            let second = try await modify(#"[{"recordName": "w2", "recordType": "Weighing", "fields": {"kilograms": 71}}, "#
                                          + #"{"recordName": "w3", "recordType": "Weighing", "fields": {"steps": 8000.5}}]"#)
            #expect((second["saved"] as? [[String: Any]])?.compactMap { $0["recordName"] as? String } == ["w2"])
            let refused = (second["errors"] as? [[String: Any]])?.first
            #expect(refused?["recordName"] as? String == "w3" && refused?["code"] as? String == "INVALID_ARGUMENTS", "\(second)")

            // An integer argument given as a whole double (limit: 1.0 from JavaScript) is that integer.
            let page = try await client.call("records", """
                query($l: Int) { records(scope: PRIVATE, zone: {zoneName: "Fasting"}, recordType: "Weighing", limit: $l) { records { recordName } } }
                """, ["l": 1.5], token: token)
            #expect(page.code == "INVALID_ARGUMENTS" || page.code == "BAD_REQUEST", "\(page.body)")
            let body = #"{"query": "query($l: Int) { records(scope: PRIVATE, zone: {zoneName: \"Fasting\"}, recordType: \"Weighing\", limit: $l) { records { recordName } } }", "variables": {"l": 1.0}}"#
            let (status, whole) = try await client.post(body: ByteBuffer(string: body), token: token)
            #expect(status == .ok)
            #expect((((whole["data"] as? [String: Any])?["records"] as? [String: Any])?["records"] as? [Any])?.count == 1, "\(whole)")
        }
    }

    @Test("atomic batches fail whole and write nothing; non-atomic ones fail record by record")
    func batches() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let token = harness.aliceToken
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Fasting\") { zoneName } }", token: token)
            _ = try await save(client, token: token, [fast("seed", hours: 1, end: 1)])
            let query = """
                mutation($s: [RecordInput!], $d: [String!], $a: Boolean) { modifyRecords(scope: PRIVATE, zone: {zoneName: "Fasting"}, save: $s, delete: $d, atomic: $a) {
                  saved { recordName } deleted errors { recordName code message } } }
                """
            let batch: [[String: Any]] = [
                fast("ok1", hours: 1, end: 1),
                ["recordName": "wrongType", "recordType": "Fast", "fields": ["hours": "sixteen"]],
                fast("orphan", hours: 1, end: 1, parent: "nobody"),
                fast("child", hours: 1, end: 1, parent: "ok2"),   // its parent comes later in the batch
                fast("ok2", hours: 1, end: 1),
            ]
            let atomic = try await client.call("modifyRecords", query, ["s": batch, "d": ["seed", "ghost"], "a": true], token: token)
            let codes = Dictionary(uniqueKeysWithValues: (atomic.object["errors"] as? [[String: Any]] ?? []).map { ($0["recordName"] as! String, $0["code"] as! String) })
            #expect(codes == ["wrongType": "INVALID_ARGUMENTS", "orphan": "REFERENCE_VIOLATION", "ghost": "UNKNOWN_ITEM",
                              "ok1": "BATCH_REQUEST_FAILED", "child": "BATCH_REQUEST_FAILED", "ok2": "BATCH_REQUEST_FAILED", "seed": "BATCH_REQUEST_FAILED"])
            #expect((atomic.object["saved"] as? [Any])?.isEmpty == true)
            #expect((atomic.object["deleted"] as? [Any])?.isEmpty == true)
            let after = try await client.call("lookup", "{ lookup(scope: PRIVATE, zone: {zoneName: \"Fasting\"}, recordNames: [\"ok1\", \"ok2\", \"seed\"]) { recordName record { recordName } error { code } } }", token: token)
            #expect(after.list.map { ($0["error"] as? [String: Any])?["code"] as? String } == ["UNKNOWN_ITEM", "UNKNOWN_ITEM", nil], "nothing of the atomic batch was written")

            let partial = try await client.call("modifyRecords", query, ["s": batch, "d": ["seed", "ghost"], "a": false], token: token)
            #expect((partial.object["saved"] as? [[String: Any]])?.compactMap { $0["recordName"] as? String }.sorted() == ["child", "ok1", "ok2"])
            #expect(partial.object["deleted"] as? [String] == ["seed"])
            #expect((partial.object["errors"] as? [[String: Any]])?.count == 3)

            let tooMany = try await client.call("modifyRecords", query, ["s": (0..<401).map { fast("n\($0)", hours: 1, end: 1) }], token: token)
            #expect(tooMany.code == "LIMIT_EXCEEDED")
            #expect(tooMany.message.contains("400"))
            let huge = try await client.call("modifyRecords", query, ["s": [["recordName": "big", "recordType": "Fast", "fields": ["blob": String(repeating: "x", count: 1_100_000)]]]], token: token)
            #expect(huge.status == .contentTooLarge || (huge.object["errors"] as? [[String: Any]])?.first?["code"] as? String == "INVALID_ARGUMENTS")
        }
    }

    @Test("deleting a record deletes those that reference it with DELETE_SELF, recursively")
    func deleteSelf() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let token = harness.aliceToken
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Contacts\") { zoneName } }", token: token)
            func ref(_ name: String) -> [String: Any] { ["type": "REFERENCE", "recordName": name, "action": "DELETE_SELF"] }
            _ = try await save(client, token: token, zone: "Contacts", [
                ["recordName": "group", "recordType": "Group", "fields": ["name": "Friends"]],
                ["recordName": "member", "recordType": "Contact", "fields": ["group": ref("group")]],
                ["recordName": "phone", "recordType": "Phone", "fields": ["contact": ref("member")]],
                ["recordName": "keeper", "recordType": "Contact", "fields": ["group": ["type": "REFERENCE", "recordName": "group", "action": "NONE"]]],
            ])
            let deleted = try await client.call("modifyRecords", "mutation { modifyRecords(scope: PRIVATE, zone: {zoneName: \"Contacts\"}, delete: [\"group\"]) { deleted errors { code } } }", token: token)
            #expect(deleted.object["deleted"] as? [String] == ["group"])
            let left = try await client.call("lookup", "{ lookup(scope: PRIVATE, zone: {zoneName: \"Contacts\"}, recordNames: [\"member\", \"phone\", \"keeper\"]) { record { recordName } } }", token: token)
            #expect(left.list.map { ($0["record"] as? [String: Any])?["recordName"] as? String } == [nil, nil, "keeper"])
        }
    }

    @Test("of eight concurrent saves with the same change tag, exactly one wins")
    func concurrentSaves() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let token = harness.aliceToken
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Fasting\") { zoneName } }", token: token)
            let tag = try #require(try await save(client, token: token, [fast("race", hours: 0, end: 1)]).first?["recordChangeTag"] as? String)
            let codes = try await withThrowingTaskGroup(of: String.self) { group in
                for attempt in 1...8 {
                    group.addTask {
                        let answer = try await client.call("modifyRecords", """
                            mutation($s: [RecordInput!]) { modifyRecords(scope: PRIVATE, zone: {zoneName: "Fasting"}, save: $s) { saved { recordName } errors { code } } }
                            """, ["s": [fast("race", hours: attempt, end: 1, tag: tag)]], token: token)
                        return (answer.object["errors"] as? [[String: Any]])?.first?["code"] as? String ?? "SAVED"
                    }
                }
                return try await group.reduce(into: [String]()) { $0.append($1) }
            }
            #expect(codes.filter { $0 == "SAVED" }.count == 1, "\(codes)")
            #expect(codes.filter { $0 == "SERVER_RECORD_CHANGED" }.count == 7, "\(codes)")
        }
    }

    @Test("records: a sorted date-range query paged with cursors returns every match once, in order")
    func paging() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let token = harness.aliceToken
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Fasting\") { zoneName } }", token: token)
            let base: Int64 = 1_700_000_000_000
            for batch in 0..<3 {
                _ = try await save(client, token: token, (batch * 100..<(batch + 1) * 100).map { fast(String(format: "f%03d", $0), hours: $0 % 24, end: base + Int64($0 % 150) * 3_600_000) })
            }
            let query = """
                query($c: String, $a: JSON) { records(scope: PRIVATE, zone: {zoneName: "Fasting"}, recordType: "Fast",
                  filter: "endDate > %@ AND endDate <= %@", args: $a, sort: [{field: "endDate", direction: DESC}], limit: 40, cursor: $c) {
                  records { recordName fields(keys: ["endDate"]) } cursor } }
                """
            var cursor: String?
            var seen: [(String, Double)] = []
            repeat {
                var variables: [String: Any] = ["a": [base + 10 * 3_600_000, base + 100 * 3_600_000]]
                if let cursor { variables["c"] = cursor }
                let page = try await client.call("records", query, variables, token: token)
                #expect(page.code == nil, "\(page.body)")
                for record in page.object["records"] as? [[String: Any]] ?? [] {
                    let end = ((record["fields"] as? [String: Any])?["endDate"] as? [String: Any])?["value"] as? Double ?? 0
                    seen.append((record["recordName"] as! String, end))
                }
                cursor = page.object["cursor"] as? String
            } while cursor != nil && seen.count < 1000
            // 90 end dates in range, each used by two records (i and i+150) except those over 150.
            let expected = (0..<300).filter { ($0 % 150) > 10 && ($0 % 150) <= 100 }.count
            #expect(seen.count == expected)
            #expect(Set(seen.map(\.0)).count == seen.count, "each record once")
            let sorted = seen.sorted { (a: (String, Double), b: (String, Double)) -> Bool in
                a.1 != b.1 ? a.1 > b.1 : a.0 < b.0
            }
            #expect(seen.map(\.0) == sorted.map(\.0), "endDate descending, recordName ascending")

            let forged = try await client.call("records", query, ["c": "eyJxIjoiIn0.AAAA", "a": [0, 1]], token: token)
            #expect(forged.code == "INVALID_ARGUMENTS")
            let tooBig = try await client.call("records", "{ records(scope: PRIVATE, zone: {zoneName: \"Fasting\"}, recordType: \"Fast\", limit: 401) { cursor } }", token: token)
            #expect(tooBig.code == "LIMIT_EXCEEDED")
            #expect(tooBig.message.contains("400"))
            let zero = try await client.call("records", "{ records(scope: PRIVATE, zone: {zoneName: \"Fasting\"}, recordType: \"Fast\", limit: 0) { cursor } }", token: token)
            #expect(zero.code == "INVALID_ARGUMENTS")
        }
    }

    @Test("filter mistakes are INVALID_ARGUMENTS naming the column; unknown zones are ZONE_NOT_FOUND")
    func filterErrors() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let token = harness.aliceToken
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Fasting\") { zoneName } }", token: token)
            _ = try await save(client, token: token, [fast("f1", hours: 1, end: 1)])
            let cases: [(String, String)] = [
                ("hours > 'many'", "column 9"),
                ("hours >> 3", "column 8"),
                ("mood == 'x'", "no field mood"),
                ("hours == $h", "$h"),
                ("endDate > %@", "%@"),
                ("note == 'unclosed", "column 9"),
                ("(hours > 1", "')'"),
            ]
            for (filter, expected) in cases {
                let answer = try await client.call("records", "query($f: String) { records(scope: PRIVATE, zone: {zoneName: \"Fasting\"}, recordType: \"Fast\", filter: $f) { cursor } }", ["f": filter], token: token)
                #expect(answer.code == "INVALID_ARGUMENTS", "\(filter)")
                #expect(answer.message.contains(expected), "\(filter): \(answer.message)")
            }
            let missing = try await client.call("records", "{ records(scope: PRIVATE, zone: {zoneName: \"Nope\"}, recordType: \"Fast\") { cursor } }", token: token)
            #expect(missing.code == "ZONE_NOT_FOUND")
            let sharedWithoutOwner = try await client.call("records", "{ records(scope: SHARED, zone: {zoneName: \"Fasting\"}, recordType: \"Fast\") { cursor } }", token: token)
            #expect(sharedWithoutOwner.code == "INVALID_ARGUMENTS")
        }
    }

    @Test("injection attempts stay values or are refused, and never reach SQL text")
    func injection() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            let token = harness.aliceToken
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Fasting\") { zoneName } }", token: token)
            _ = try await save(client, token: token, [fast("f1", hours: 1, end: 1)])
            let evil = "x'); DROP TABLE canopy.records; --"
            let asValue = try await client.call("records", "query($f: String) { records(scope: PRIVATE, zone: {zoneName: \"Fasting\"}, recordType: \"Fast\", filter: $f) { records { recordName } } }", ["f": "note == \"\(evil)\""], token: token)
            #expect(asValue.code == nil, "\(asValue.body)")
            #expect((asValue.object["records"] as? [Any])?.isEmpty == true)
            let asKey = try await client.call("records", "query($f: String) { records(scope: PRIVATE, zone: {zoneName: \"Fasting\"}, recordType: \"Fast\", filter: $f) { cursor } }", ["f": "\(evil) == 1"], token: token)
            #expect(asKey.code == "INVALID_ARGUMENTS")
            let asSort = try await client.call("records", "query($s: [Sort!]) { records(scope: PRIVATE, zone: {zoneName: \"Fasting\"}, recordType: \"Fast\", sort: $s) { cursor } }", ["s": [["field": evil]]], token: token)
            #expect(asSort.code == "INVALID_ARGUMENTS")
            let asProjection = try await client.call("lookup", "query($k: [String!]) { lookup(scope: PRIVATE, zone: {zoneName: \"Fasting\"}, recordNames: [\"f1\"]) { record { fields(keys: $k) } } }", ["k": [evil]], token: token)
            #expect(((asProjection.list.first?["record"] as? [String: Any])?["fields"] as? [String: Any])?.isEmpty == true)
            let asField = try await client.call("modifyRecords", "mutation($s: [RecordInput!]) { modifyRecords(scope: PRIVATE, zone: {zoneName: \"Fasting\"}, save: $s) { errors { code } } }", ["s": [["recordName": "f2", "recordType": "Fast", "fields": [evil: 1]]]], token: token)
            #expect((asField.object["errors"] as? [[String: Any]])?.first?["code"] as? String == "INVALID_ARGUMENTS")
            let asType = try await client.call("records", "{ records(scope: PRIVATE, zone: {zoneName: \"Fasting\"}, recordType: \"Fast; DROP\") { cursor } }", token: token)
            #expect(asType.code == "INVALID_ARGUMENTS")
            let still = try await client.call("lookup", "{ lookup(scope: PRIVATE, zone: {zoneName: \"Fasting\"}, recordNames: [\"f1\"]) { record { recordName } } }", token: token)
            #expect((still.list.first?["record"] as? [String: Any])?["recordName"] as? String == "f1", "the table is still there: \(still.body)")
        }
    }
}
