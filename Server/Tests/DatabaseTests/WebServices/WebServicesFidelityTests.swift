@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyGateway
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Each difference from the reference that issue 49 closed, as the request
/// the reference describes and the answer it says a client gets (written
/// from the reference's dictionaries, not from Canopy's answers).
@Suite("Web Services: the reference's answers, as it describes them", .serialized, .enabled(if: CanopyBinary.exists, "needs the canopy binary (swift build)"))
struct WebServicesFidelityTests {
    @Test("zones/list and zones/lookup answer each zone's syncToken; changes/zone from it reports only what changed after")
    func zonesCarrySyncTokens() async throws {
        let harness = try await GatewayHarness.make()
        let token = try await WebServicesFixture.apiToken(on: harness.endpoint)
        try await harness.test(configuration: WebServicesFixture.configuration(), live: true) { client in
            func call(_ subpath: String, _ body: String? = nil, method: HTTPRequest.Method = .post) async throws -> WebServicesAnswer {
                try await client.webServices(subpath, body, apiToken: token, webAuthToken: harness.aliceToken, method: method)
            }
            _ = try await call("private/zones/modify", #"{"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": "Trips"}}}]}"#)
            _ = try await call("private/records/modify", #"{"zoneID": {"zoneName": "Trips"}, "operations": [{"operationType": "create", "record": {"recordType": "Trip", "recordName": "before", "fields": {}}}]}"#)

            let list = try await call("private/zones/list", method: .get)
            #expect(list.status == .ok, "\(list.body)")
            let trips = try #require(list.zones.first { ($0["zoneID"] as? [String: Any])?["zoneName"] as? String == "Trips" }, "\(list.body)")
            let listed = try #require(trips["syncToken"] as? String, "a zone dictionary has its syncToken: \(trips)")
            #expect(list.zones.allSatisfy { $0["syncToken"] is String }, "\(list.body)")
            let lookup = try await call("private/zones/lookup", #"{"zones": [{"zoneName": "Trips"}]}"#)
            #expect(lookup.zones.first?["syncToken"] is String, "\(lookup.body)")
            let publicZones = try await call("public/zones/list", method: .get)
            #expect(publicZones.zones.first?["syncToken"] is String, "the public zone too: \(publicZones.body)")

            // Nothing changed since the token: an empty page.
            let none = try await call("private/changes/zone", #"{"zones": [{"zoneID": {"zoneName": "Trips"}, "syncToken": "\#(listed)"}]}"#)
            let quiet = try #require((none.body["zones"] as? [[String: Any]])?.first, "\(none.body)")
            #expect((quiet["records"] as? [Any])?.isEmpty == true && quiet["moreComing"] as? Bool == false, "\(quiet)")
            // A record saved after: that record alone.
            _ = try await call("private/records/modify", #"{"zoneID": {"zoneName": "Trips"}, "operations": [{"operationType": "create", "record": {"recordType": "Trip", "recordName": "after", "fields": {}}}]}"#)
            let some = try await call("private/changes/zone", #"{"zones": [{"zoneID": {"zoneName": "Trips"}, "syncToken": "\#(listed)"}]}"#)
            let changed = try #require((some.body["zones"] as? [[String: Any]])?.first, "\(some.body)")
            #expect((changed["records"] as? [[String: Any]])?.compactMap { $0["recordName"] as? String } == ["after"], "\(changed)")
        }
    }

    @Test("a record has one created and one modified stamp, whole milliseconds, the same in records/modify, lookup, query, changes and GraphQL")
    func stampsAreWholeMillisecondsEverywhere() async throws {
        let harness = try await GatewayHarness.make()
        let token = try await WebServicesFixture.apiToken(on: harness.endpoint)
        try await harness.test(configuration: WebServicesFixture.configuration(), live: true) { client in
            func call(_ subpath: String, _ body: String) async throws -> WebServicesAnswer {
                try await client.webServices(subpath, body, apiToken: token, webAuthToken: harness.aliceToken)
            }
            func stamps(_ record: [String: Any]?) -> [NSNumber] {
                ["created", "modified"].compactMap { ((record?[$0] as? [String: Any])?["timestamp"]) as? NSNumber }
            }
            var seen: [String: [NSNumber]] = [:]
            for attempt in 0..<5 {   // several saves: one landing on a whole millisecond would prove nothing
                let name = "stamp\(attempt)"
                let saved = try await call("private/records/modify", #"{"operations": [{"operationType": "create", "record": {"recordType": "Stamped", "recordName": "\#(name)", "fields": {"n": {"value": \#(attempt)}}}}]}"#)
                seen["modify \(name)"] = stamps(saved.records.first)
                let lookup = try await call("private/records/lookup", #"{"records": [{"recordName": "\#(name)"}]}"#)
                seen["lookup \(name)"] = stamps(lookup.records.first)
                let graphQL = try await client.call("lookup", "query($n: [String!]!) { lookup(scope: PRIVATE, zone: {zoneName: \"_defaultZone\"}, recordNames: $n) { record { created { timestamp } modified { timestamp } } } }", ["n": [name]], token: harness.aliceToken)
                let record = (graphQL.list.first?["record"] as? [String: Any])
                seen["graphql \(name)"] = stamps(record)
            }
            let query = try await call("private/records/query", #"{"query": {"recordType": "Stamped"}}"#)
            let changes = try await call("private/changes/zone", #"{"zones": [{"zoneID": {"zoneName": "_defaultZone"}}]}"#)
            let changed = ((changes.body["zones"] as? [[String: Any]])?.first?["records"] as? [[String: Any]]) ?? []
            for attempt in 0..<5 {
                let name = "stamp\(attempt)"
                seen["query \(name)"] = stamps(query.records.first { $0["recordName"] as? String == name })
                seen["changes \(name)"] = stamps(changed.first { $0["recordName"] as? String == name })
                let answers = seen.filter { $0.key.hasSuffix(" \(name)") }
                #expect(answers.count == 5 && answers.values.allSatisfy { $0.count == 2 }, "\(answers)")
                let distinct = Set(answers.values.map { $0.map(\.doubleValue) })
                #expect(distinct.count == 1, "one record, one pair of stamps: \(answers)")
                for value in answers.values.flatMap({ $0 }) {
                    #expect(value.doubleValue == value.doubleValue.rounded(.down) && "\(value)".allSatisfy(\.isNumber), "whole milliseconds, written as an integer: \(value)")
                }
            }
        }
    }

    @Test("INT64 at both bounds is saved and answered exactly; one past either is refused")
    func int64Bounds() async throws {
        let harness = try await GatewayHarness.make()
        let token = try await WebServicesFixture.apiToken(on: harness.endpoint)
        try await harness.test(configuration: WebServicesFixture.configuration(), live: true) { client in
            let saved = try await client.webServices("private/records/modify", #"{"operations": [{"operationType": "create", "record": {"recordType": "Bounds", "recordName": "b", "fields": {"low": {"value": -9223372036854775808, "type": "INT64"}, "high": {"value": 9223372036854775807, "type": "INT64"}}}}]}"#, apiToken: token, webAuthToken: harness.aliceToken)
            #expect(saved.status == .ok && saved.records.first?["serverErrorCode"] == nil, "\(saved.body)")
            let lookup = try await client.execute(
                uri: "/database/1/\(WebServicesFixture.container)/production/private/records/lookup?ckAPIToken=\(token)&ckWebAuthToken=\(harness.aliceToken)",
                method: .post, headers: [.contentType: "application/json"], body: ByteBuffer(string: #"{"records": [{"recordName": "b"}]}"#))
            // Read as text: a JSON number parser might round either bound.
            let text = String(buffer: lookup.body).replacingOccurrences(of: " ", with: "")
            #expect(text.contains(#""value":-9223372036854775808"#) && text.contains(#""value":9223372036854775807"#), "\(text)")
            let strings = try await client.webServices("private/records/lookup", #"{"numbersAsStrings": true, "records": [{"recordName": "b"}]}"#, apiToken: token, webAuthToken: harness.aliceToken)
            let fields = try #require(strings.records.first?["fields"] as? [String: [String: Any]], "\(strings.body)")
            #expect(fields["low"]?["value"] as? String == "-9223372036854775808" && fields["high"]?["value"] as? String == "9223372036854775807", "\(fields)")
            let over = try await client.webServices("private/records/modify", #"{"operations": [{"operationType": "create", "record": {"recordType": "Bounds", "recordName": "o", "fields": {"high": {"value": 9223372036854775808, "type": "INT64"}}}}]}"#, apiToken: token, webAuthToken: harness.aliceToken)
            #expect(over.records.first?["serverErrorCode"] as? String == "BAD_REQUEST", "\(over.body)")
            let under = try await client.webServices("private/records/modify", #"{"operations": [{"operationType": "create", "record": {"recordType": "Bounds", "recordName": "u", "fields": {"low": {"value": "-9223372036854775809", "type": "INT64"}}}}]}"#, apiToken: token, webAuthToken: harness.aliceToken)
            #expect(under.records.first?["serverErrorCode"] as? String == "BAD_REQUEST", "\(under.body)")
        }
    }

    @Test("CONTAINS_ALL_TOKENS and CONTAINS_ANY_TOKENS without fieldName search all of a record's text fields")
    func tokensWithoutFieldName() async throws {
        let harness = try await GatewayHarness.make()
        let token = try await WebServicesFixture.apiToken(on: harness.endpoint)
        try await harness.test(configuration: WebServicesFixture.configuration(), live: true) { client in
            func call(_ subpath: String, _ body: String) async throws -> WebServicesAnswer {
                try await client.webServices(subpath, body, apiToken: token, webAuthToken: harness.aliceToken)
            }
            _ = try await call("private/records/modify", """
                {"operations": [
                  {"operationType": "create", "record": {"recordType": "Note", "recordName": "n1", "fields": {"title": {"value": "Harbour walk"}, "body": {"value": "ferry at noon"}}}},
                  {"operationType": "create", "record": {"recordType": "Note", "recordName": "n2", "fields": {"title": {"value": "Ferry times"}, "body": {"value": "check the timetable"}}}},
                  {"operationType": "create", "record": {"recordType": "Note", "recordName": "n3", "fields": {"title": {"value": "Groceries"}, "body": {"value": "bread, harbour fish"}}}}
                ]}
                """)
            func names(_ filter: String) async throws -> [String] {
                let answer = try await call("private/records/query", #"{"query": {"recordType": "Note", "filterBy": [\#(filter)], "sortBy": [{"systemFieldName": "recordName"}]}}"#)
                #expect(answer.status == .ok, "\(filter): \(answer.body)")
                return answer.records.compactMap { $0["recordName"] as? String }
            }
            // The reference's Filter Dictionary: comparator and fieldValue only.
            #expect(try await names(#"{"comparator": "CONTAINS_ALL_TOKENS", "fieldValue": {"value": "harbour ferry"}}"#) == ["n1"])
            #expect(try await names(#"{"comparator": "CONTAINS_ALL_TOKENS", "fieldValue": {"value": "harbour"}}"#) == ["n1", "n3"])
            #expect(try await names(#"{"comparator": "CONTAINS_ANY_TOKENS", "fieldValue": {"value": "timetable groceries"}}"#) == ["n2", "n3"])
            let otherWithout = try await call("private/records/query", #"{"query": {"recordType": "Note", "filterBy": [{"comparator": "EQUALS", "fieldValue": {"value": "x"}}]}}"#)
            #expect(otherWithout.status == .badRequest && (otherWithout.body["reason"] as? String)?.contains("fieldName") == true, "other comparators still need a field: \(otherWithout.body)")
        }
    }

    @Test("a LOCATION keeps the Location Dictionary's eight keys, in Web Services and in GraphQL")
    func locationsKeepEightKeys() async throws {
        let harness = try await GatewayHarness.make()
        let token = try await WebServicesFixture.apiToken(on: harness.endpoint)
        try await harness.test(configuration: WebServicesFixture.configuration(), live: true) { client in
            let fix = #"{"latitude": 37.3349, "longitude": -122.009, "horizontalAccuracy": 5, "verticalAccuracy": 3.5, "altitude": 42.25, "speed": 1.75, "course": 270, "timestamp": 1795707791164}"#
            let saved = try await client.webServices("private/records/modify", #"{"operations": [{"operationType": "create", "record": {"recordType": "Visit", "recordName": "v", "fields": {"where": {"value": \#(fix), "type": "LOCATION"}, "bare": {"value": {"latitude": 1, "longitude": 2}, "type": "LOCATION"}}}}]}"#, apiToken: token, webAuthToken: harness.aliceToken)
            #expect(saved.records.first?["serverErrorCode"] == nil, "\(saved.body)")
            let expected = try JSONSerialization.jsonObject(with: Data(fix.utf8)) as! NSDictionary
            for answer in [saved, try await client.webServices("private/records/lookup", #"{"records": [{"recordName": "v"}]}"#, apiToken: token, webAuthToken: harness.aliceToken),
                           try await client.webServices("private/records/query", #"{"query": {"recordType": "Visit"}}"#, apiToken: token, webAuthToken: harness.aliceToken)] {
                let fields = try #require(answer.records.first?["fields"] as? [String: [String: Any]], "\(answer.body)")
                #expect((fields["where"]?["value"] as? NSDictionary) == expected && fields["where"]?["type"] as? String == "LOCATION", "\(fields["where"] ?? [:])")
                #expect((fields["bare"]?["value"] as? [String: Any])?.keys.sorted() == ["latitude", "longitude"], "keys not given are not invented: \(fields["bare"] ?? [:])")
            }
            let graphQL = try await client.call("lookup", #"{ lookup(scope: PRIVATE, zone: {zoneName: "_defaultZone"}, recordNames: ["v"]) { record { fields } } }"#, token: harness.aliceToken)
            let place = ((graphQL.list.first?["record"] as? [String: Any])?["fields"] as? [String: Any])?["where"] as? [String: Any]
            #expect(place?["speed"] as? Double == 1.75 && place?["timestamp"] as? Int64 == 1795707791164 && place?["type"] as? String == "LOCATION", "\(graphQL.body)")
            let unknownKey = try await client.webServices("private/records/modify", #"{"operations": [{"operationType": "create", "record": {"recordType": "Visit", "recordName": "w", "fields": {"where": {"value": {"latitude": 1, "longitude": 2, "floor": 3}, "type": "LOCATION"}}}}]}"#, apiToken: token, webAuthToken: harness.aliceToken)
            #expect(unknownKey.records.first?["serverErrorCode"] as? String == "BAD_REQUEST" && (unknownKey.records.first?["reason"] as? String)?.contains("floor") == true, "\(unknownKey.body)")
            let notNumber = try await client.call("modifyRecords", #"mutation { modifyRecords(scope: PRIVATE, zone: {zoneName: "_defaultZone"}, save: [{recordName: "x", recordType: "Visit", fields: {where: {type: "LOCATION", latitude: 1, longitude: 2, speed: "fast"}}}]) { saved { recordName } errors { code message } } }"#, token: harness.aliceToken)
            #expect("\(notNumber.body)".contains("INVALID_ARGUMENTS"), "a key's value is a number: \(notNumber.body)")
        }
    }

    @Test("sortBy relativeLocation: nearest first (farthest first descending), across continuation markers, and over GraphQL")
    func relativeLocationSort() async throws {
        let harness = try await GatewayHarness.make()
        let token = try await WebServicesFixture.apiToken(on: harness.endpoint)
        try await harness.test(configuration: WebServicesFixture.configuration(), live: true) { client in
            // Distances from (0, 0): c 1°, a 2°, d 3°, b 5°; e has no location.
            let places = [("a", 2.0), ("b", 5.0), ("c", 1.0), ("d", 3.0)]
            let operations = places.map { name, degrees in
                #"{"operationType": "create", "record": {"recordType": "Cafe", "recordName": "\#(name)", "fields": {"place": {"value": {"latitude": \#(degrees), "longitude": 0}, "type": "LOCATION"}}}}"#
            } + [#"{"operationType": "create", "record": {"recordType": "Cafe", "recordName": "e", "fields": {"name": {"value": "somewhere"}}}}"#]
            let saved = try await client.webServices("private/records/modify", #"{"operations": [\#(operations.joined(separator: ","))]}"#, apiToken: token, webAuthToken: harness.aliceToken)
            #expect(saved.records.allSatisfy { $0["serverErrorCode"] == nil }, "\(saved.body)")
            func pages(ascending: Bool, limit: Int) async throws -> [String] {
                var names: [String] = []
                var marker: String?
                repeat {
                    let markerJSON = marker.map { #", "continuationMarker": "\#($0)""# } ?? ""
                    let page = try await client.webServices("private/records/query", #"{"resultsLimit": \#(limit)\#(markerJSON), "query": {"recordType": "Cafe", "sortBy": [{"fieldName": "place", "ascending": \#(ascending), "relativeLocation": {"latitude": 0, "longitude": 0}}]}}"#, apiToken: token, webAuthToken: harness.aliceToken)
                    #expect(page.status == .ok, "\(page.body)")
                    names += page.records.compactMap { $0["recordName"] as? String }
                    marker = page.body["continuationMarker"] as? String
                } while marker != nil && names.count < 20
                return names
            }
            #expect(try await pages(ascending: true, limit: 10) == ["c", "a", "d", "b", "e"], "nearest first; no location last")
            #expect(try await pages(ascending: true, limit: 2) == ["c", "a", "d", "b", "e"], "the same across markers")
            let farthestFirst = try await pages(ascending: false, limit: 3)
            #expect(farthestFirst == ["b", "d", "a", "c", "e"], "farthest first: \(farthestFirst)")
            let graphQL = try await client.call("records", #"{ records(scope: PRIVATE, zone: {zoneName: "_defaultZone"}, recordType: "Cafe", sort: [{field: "place", relativeLocation: {latitude: 4.9, longitude: 0}}]) { records { recordName } } }"#, token: harness.aliceToken)
            let order = ((graphQL.object["records"] as? [[String: Any]]) ?? []).compactMap { $0["recordName"] as? String }
            #expect(order == ["b", "d", "a", "c", "e"], "from near b, b first: \(graphQL.body)")
            let notLocation = try await client.webServices("private/records/query", #"{"query": {"recordType": "Cafe", "sortBy": [{"fieldName": "name", "relativeLocation": {"latitude": 0, "longitude": 0}}]}}"#, apiToken: token, webAuthToken: harness.aliceToken)
            #expect(notLocation.status == .badRequest && (notLocation.body["reason"] as? String)?.contains("LOCATION") == true, "\(notLocation.body)")
        }
    }

    @Test("ANY tags BEGINSWITH in Canopy's predicate language, as LIST_MEMBER_BEGINS_WITH is over Web Services")
    func listMemberBeginsWithInGraphQL() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test(configuration: WebServicesFixture.configuration(), live: true) { client in
            let saved = try await client.call("modifyRecords", #"mutation { modifyRecords(scope: PRIVATE, zone: {zoneName: "_defaultZone"}, save: [{recordName: "p1", recordType: "Post", fields: {tags: ["swift", "server"]}}, {recordName: "p2", recordType: "Post", fields: {tags: ["sql"]}}, {recordName: "p3", recordType: "Post", fields: {title: "untagged"}}]) { saved { recordName } } }"#, token: harness.aliceToken)
            #expect((saved.object["saved"] as? [Any])?.count == 3, "\(saved.body)")
            func names(_ filter: String, _ args: [String: Any]) async throws -> [String] {
                let answer = try await client.call("records", "query($f: String, $a: JSON) { records(scope: PRIVATE, zone: {zoneName: \"_defaultZone\"}, recordType: \"Post\", filter: $f, args: $a) { records { recordName } } }", ["f": filter, "a": args], token: harness.aliceToken)
                #expect(answer.code == nil, "\(filter): \(answer.body)")
                return ((answer.object["records"] as? [[String: Any]]) ?? []).compactMap { $0["recordName"] as? String }
            }
            #expect(try await names("ANY tags BEGINSWITH $p", ["p": "se"]) == ["p1"])
            #expect(try await names("ANY tags BEGINSWITH $p", ["p": "s"]) == ["p1", "p2"])
            #expect(try await names("NOT (ANY tags BEGINSWITH $p)", ["p": "sw"]) == ["p2", "p3"], "a record without the list is not a match, so NOT matches it")
            let wrongType = try await client.call("records", #"{ records(scope: PRIVATE, zone: {zoneName: "_defaultZone"}, recordType: "Post", filter: "ANY title BEGINSWITH 'u'") { records { recordName } } }"#, token: harness.aliceToken)
            #expect(wrongType.code == "INVALID_ARGUMENTS" && wrongType.message.contains("STRING_LIST"), "\(wrongType.body)")
        }
    }

    @Test("GraphQL and Web Services answer the same values, stamps and asset URLs for the same records, from one projection")
    func bothDoorsAnswerTheSameRecords() async throws {
        let (harness, assetConfiguration, _) = try await GatewayHarness.withAssets()
        var configuration = assetConfiguration
        configuration.webServices = WebServicesFixture.configuration().webServices
        let token = try await WebServicesFixture.apiToken(on: harness.endpoint)
        try await harness.test(configuration: configuration, live: true) { client in
            let upload = try await client.execute(uri: "/assets", method: .post, headers: [.authorization: "Bearer \(harness.aliceToken)", .contentType: "text/plain"],
                                                  body: ByteBuffer(string: "the same bytes"))
            let uploadToken = try #require(try responseJSON(upload.body)["uploadToken"] as? String)
            let fields: [String: Any] = [
                "s": "text", "i": 42, "low": -9223372036854775807 - 1, "d": 2.5, "whole": ["type": "DOUBLE"] as [String: Any],
                "b": true, "t": ["type": "TIMESTAMP", "value": 1795707791164], "bytes": ["type": "BYTES", "base64": "AAEC/w=="],
                "ref": ["type": "REFERENCE", "recordName": "other", "action": "NONE"],
                "loc": ["type": "LOCATION", "latitude": 1.5, "longitude": -2, "speed": 3],
                "tags": ["a", "b"], "nums": [1, 2.5], "file": ["type": "ASSET", "uploadToken": uploadToken],
            ].filter { $0.key != "whole" }
            let saved = try await client.call("modifyRecords", "mutation($s: [RecordInput!]) { modifyRecords(scope: PRIVATE, zone: {zoneName: \"_defaultZone\"}, save: $s) { errors { message } } }",
                                              ["s": [["recordName": "same", "recordType": "Same", "fields": fields]]], token: harness.aliceToken)
            #expect((saved.object["errors"] as? [Any])?.isEmpty == true, "\(saved.body)")
            let graphQL = try await client.call("lookup", "{ lookup(scope: PRIVATE, zone: {zoneName: \"_defaultZone\"}, recordNames: [\"same\"]) { record { recordChangeTag fields created { timestamp userRecordName } modified { timestamp userRecordName } } } }", token: harness.aliceToken)
            let record = try #require(graphQL.list.first?["record"] as? [String: Any], "\(graphQL.body)")
            let canopy = try #require(record["fields"] as? [String: Any])
            for path in ["private/records/lookup", "private/records/query"] {
                let body = path.hasSuffix("lookup") ? #"{"records": [{"recordName": "same"}]}"# : #"{"query": {"recordType": "Same"}}"#
                let answer = try await client.webServices(path, body, apiToken: token, webAuthToken: harness.aliceToken)
                let ck = try #require(answer.records.first, "\(answer.body)")
                #expect(ck["recordChangeTag"] as? String == record["recordChangeTag"] as? String)
                for stamp in ["created", "modified"] {
                    let a = (record[stamp] as? [String: Any])?["timestamp"] as? NSNumber, b = (ck[stamp] as? [String: Any])?["timestamp"] as? NSNumber
                    #expect(a != nil && a == b, "\(path) \(stamp): \(String(describing: a)) against \(String(describing: b))")
                }
                let values = try #require(ck["fields"] as? [String: [String: Any]], "\(ck)")
                #expect(Set(values.keys) == Set(canopy.keys), "\(values.keys.sorted()) against \(canopy.keys.sorted())")
                func same(_ a: Any?, _ b: Any?) -> Bool {
                    guard let a, let b else { return false }
                    return (try? JSONSerialization.data(withJSONObject: [a], options: .sortedKeys)) == (try? JSONSerialization.data(withJSONObject: [b], options: .sortedKeys))
                }
                for name in ["s", "i", "low", "d", "tags", "nums"] {
                    #expect(same(values[name]?["value"], canopy[name]), "\(path) \(name): \(values[name] ?? [:]) against \(canopy[name] ?? "nil")")
                }
                #expect(values["b"]?["value"] as? Int == 1 && values["b"]?["type"] as? String == "INT64")
                #expect(same(values["t"]?["value"], (canopy["t"] as? [String: Any])?["value"]))
                #expect(same(values["bytes"]?["value"], (canopy["bytes"] as? [String: Any])?["base64"]))
                #expect((values["ref"]?["value"] as? [String: Any])?["recordName"] as? String == "other")
                var location = canopy["loc"] as? [String: Any] ?? [:]
                location["type"] = nil
                #expect(same(values["loc"]?["value"], location), "\(values["loc"] ?? [:])")
                let asset = values["file"]?["value"] as? [String: Any], stored = canopy["file"] as? [String: Any]
                #expect(asset?["fileChecksum"] as? String == stored?["sha256"] as? String && values["file"]?["type"] as? String == "ASSETID", "\(values["file"] ?? [:])")
                // The same URL but for when it was signed (expires is the answer's second plus the lifetime).
                func unsigned(_ url: String?) -> String? { url.map { String($0.split(separator: "&expires=")[0]) } }
                let url = asset?["downloadURL"] as? String
                #expect(url != nil && unsigned(url) == unsigned(stored?["downloadURL"] as? String) && url!.contains("&signature="),
                        "one URL for one asset: \(url ?? "none") against \(stored?["downloadURL"] ?? "none")")
            }
        }
    }
}
