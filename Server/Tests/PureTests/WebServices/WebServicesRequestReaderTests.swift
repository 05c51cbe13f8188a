import CanopyPlanner
import CanopyWebServices
import Testing

/// The Web Services request readers and answer writers live in
/// CanopyWebServices (issue 66): each is checked here without a server,
/// the refusals for naming what is wrong and where.
@Suite("Web Services request readers and answer writers")
struct WebServicesRequestReaderTests {
    func json(_ text: String) throws -> JSONValue { try JSONValue(parsing: text) }

    func refusal(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch let error as QueryError {
            return error.code == .badRequest || error.code == .limitExceeded ? error.message : "\(error.code): \(error.message)"
        } catch {
            return "\(error)"
        }
    }

    @Test("a zone ID dictionary: the default zone when absent; the public zone's __defaultOwner__ dropped on reading and written back; wrong types refused naming the member and where")
    func zoneID() throws {
        #expect(try WebServicesZoneID.read(nil, scope: .private) == WebServicesZoneID(zoneName: "_defaultZone", scope: .private))
        let owned = try WebServicesZoneID.read(try json(#"{"zoneName": "Trips", "ownerRecordName": "_bob"}"#), scope: .shared)
        #expect(owned.zoneName == "Trips" && owned.ownerName == "_bob")
        #expect(owned.dictionary == (try json(#"{"zoneName": "Trips", "zoneType": "REGULAR_CUSTOM_ZONE", "ownerRecordName": "_bob"}"#)))

        let publicZone = try WebServicesZoneID.read(try json(#"{"zoneName": "_defaultZone", "ownerRecordName": "__defaultOwner__"}"#), scope: .public)
        #expect(publicZone.ownerName == nil)
        #expect(publicZone.dictionary == (try json(#"{"zoneName": "_defaultZone", "zoneType": "DEFAULT_ZONE", "ownerRecordName": "__defaultOwner__"}"#)))
        #expect(WebServicesZoneID(scope: .private).dictionary == (try json(#"{"zoneName": "_defaultZone", "zoneType": "DEFAULT_ZONE"}"#)))

        #expect(refusal { _ = try WebServicesZoneID.read(try json(#"{"zoneName": 7}"#), at: "zones[2]", scope: .private) }
            == "zones[2].zoneName must be a string, not a number")
        #expect(refusal { _ = try WebServicesZoneID.read(try json(#"{"ownerRecordName": true}"#), scope: .private) }
            == "zoneID.ownerRecordName must be a string, not a boolean")
        #expect(refusal { _ = try WebServicesZoneID.read(.string("Trips"), scope: .private) }?.hasPrefix("zoneID must be a zone ID dictionary") == true)
    }

    @Test("the body's members read as the reference types them: resultsLimit a whole number, syncToken a string, desiredKeys field names or null")
    func body() throws {
        let body = WebServicesRequestBody(try json(#"{"resultsLimit": 20, "syncToken": "abc", "desiredKeys": ["title", "year"], "numbersAsStrings": true}"#).objectValue ?? [:])
        #expect(try body.integer("resultsLimit") == 20)
        #expect(try body.integer("absent") == nil)
        #expect(try body.string("syncToken") == "abc")
        #expect(try body.desiredKeys() == ["title", "year"])
        #expect(try body.desiredKeys(.null) == nil, "an item's own null desiredKeys: every field")
        #expect(body.numbersAsStrings)

        let wrong = WebServicesRequestBody(try json(#"{"resultsLimit": "20", "syncToken": 5, "desiredKeys": ["ok", "not a name"]}"#).objectValue ?? [:])
        #expect(refusal { _ = try wrong.integer("resultsLimit") } == "resultsLimit must be a whole number, not a string")
        #expect(refusal { _ = try wrong.string("syncToken") } == "syncToken must be a string, not a number")
        #expect(refusal { _ = try wrong.desiredKeys() } == "desiredKeys must be a list of field names")
        #expect(refusal { _ = try WebServicesRequestBody.desiredKeys(.string("title")) } == "desiredKeys must be a list of field names, not a string")
    }

    @Test("a zones/modify operation: create or delete of a zone ID; anything else refused naming the operation")
    func zoneOperation() throws {
        let create = try WebServicesZoneOperation(try json(#"{"operationType": "create", "zone": {"zoneID": {"zoneName": "Notes"}}}"#),
                                                  at: "operations[0]", scope: .private)
        #expect(create.action == .create && create.zone.zoneName == "Notes")
        #expect(refusal { _ = try WebServicesZoneOperation(try json(#"{"operationType": "rename", "zone": {"zoneID": {}}}"#), at: "operations[1]", scope: .private) }
            == "operations[1].operationType must be create or delete")
        #expect(refusal { _ = try WebServicesZoneOperation(try json(#"{"operationType": "delete"}"#), at: "operations[2]", scope: .private) }
            == #"operations[2] needs zone: {"zoneID": {"zoneName": …}}"#)
        #expect(refusal { _ = try WebServicesZoneOperation(try json(#"{"operationType": "delete", "zone": {"zoneID": {"zoneName": []}}}"#), at: "operations[3]", scope: .private) }
            == "operations[3].zone.zoneID.zoneName must be a string, not a list")
    }

    @Test("a subscriptions/modify operation: zone and query subscriptions in the planner's terms (zone-wide unless a zone is named, events upper-cased, the filter as Canopy's predicate); a wrong dictionary is refused naming where")
    func subscription() throws {
        let zoneOperation = try WebServicesSubscriptionRequest(operation: try json(#"""
            {"operationType": "create", "subscription": {"subscriptionID": "z", "subscriptionType": "zone", "zoneID": {"zoneName": "Notes"}}}
            """#), at: "operations[0]") { "new" }
        #expect(zoneOperation.action == .create && zoneOperation.subscriptionID == "z")
        let zone = try zoneOperation.subscription(scope: .private)
        #expect(zone.kind == .zone && zone.zone?.zoneName == "Notes" && zone.query == nil)

        let query = try WebServicesSubscriptionRequest(operation: try json(#"""
            {"operationType": "update", "subscription": {"subscriptionType": "query", "firesOn": ["create", "delete"],
             "query": {"recordType": "Note", "filterBy": [{"fieldName": "year", "comparator": "EQUALS", "fieldValue": {"value": 2026}}]},
             "notificationInfo": {"alertBody": "new"}}}
            """#), at: "operations[1]") { "generated" }
        #expect(query.subscriptionID == "generated")
        let watched = try query.subscription(scope: .private)
        #expect(watched.kind == .query && watched.zone == nil, "zone-wide: no zoneID")
        #expect(watched.firesOn == ["CREATE", "DELETE"])
        #expect(watched.query?.recordType == "Note" && watched.query?.filter != nil && watched.query?.args != nil)
        #expect(watched.notificationInfo == (try json(#"{"alertBody": "new"}"#)))

        let named = try WebServicesSubscription(try json(#"{"subscriptionType": "query", "zoneID": {"zoneName": "Notes"}, "query": {"recordType": "Note"}}"#).objectValue ?? [:],
                                                at: "s", scope: .private)
        #expect(named.zone?.zoneName == "Notes", "a named zone without zoneWide narrows the subscription to it")
        let wide = try WebServicesSubscription(try json(#"{"subscriptionType": "query", "zoneWide": true, "zoneID": {"zoneName": "Notes"}, "query": {"recordType": "Note"}}"#).objectValue ?? [:],
                                               at: "s", scope: .private)
        #expect(wide.zone == nil, "zoneWide: true wins over a zoneID")

        let place = "operations[4].subscription"
        func refused(_ text: String) -> String? {
            refusal { _ = try WebServicesSubscription(try json(text).objectValue ?? [:], at: place, scope: .private) }
        }
        #expect(refused(#"{"subscriptionType": "database"}"#) == "\(place).subscriptionType must be zone or query")
        #expect(refused(#"{"subscriptionType": "query", "query": {"recordType": "Note"}, "firesOn": ["insert"]}"#) == "\(place).firesOn holds create, update and delete")
        #expect(refused(#"{"subscriptionType": "query", "query": {"recordType": "Note"}, "zoneWide": "yes"}"#) == "\(place).zoneWide must be true or false, not a string")
        #expect(refused(#"{"subscriptionType": "query", "query": {"recordType": "Note"}, "firesOnce": true}"#)?.contains("firesOnce") == true)
        #expect(refused(#"{"subscriptionType": "zone", "notificationInfo": {"shouldBadge": 1}}"#) == "\(place).notificationInfo.shouldBadge must be true or false")
        #expect(refusal { _ = try WebServicesSubscriptionRequest(operation: try json(#"{"operationType": "create"}"#), at: "operations[5]") { "x" } }
            == "operations[5] needs operationType (create, update or delete) and a subscription dictionary")
        #expect(refusal { _ = try WebServicesSubscriptionRequest(operation: try json(#"{"operationType": "delete", "subscription": {"subscriptionID": 3}}"#), at: "operations[6]") { "x" } }
            == "operations[6].subscription.subscriptionID must be a string, not a number")
    }

    @Test("a records/modify operation: each of the seven types with its save policy; a record's own fault is its refusal, a malformed operation is thrown naming where")
    func recordOperation() throws {
        func read(_ text: String, at index: Int = 0) throws -> WebServicesRecordOperation {
            try WebServicesRecordOperation(try json(text), at: index) { "generated" }
        }
        let update = try read(#"{"operationType": "update", "desiredKeys": ["title"], "record": {"recordName": "n1", "recordType": "Note", "recordChangeTag": "t1", "fields": {"title": {"value": "x"}}, "parent": {"recordName": "p"}}}"#)
        #expect(update.type == .update && update.recordName == "n1" && update.recordType == "Note" && update.tag == "t1" && update.parent == "p")
        #expect(update.savePolicy == .ifServerRecordUnchangedChangedKeys && update.desiredKeys == .some(["title"]) && update.refusal == nil)
        #expect(try read(#"{"operationType": "forceUpdate", "record": {"recordName": "n"}}"#).savePolicy == .changedKeys)
        #expect(try read(#"{"operationType": "replace", "record": {"recordName": "n"}}"#).savePolicy == .ifServerRecordUnchanged)
        #expect(try read(#"{"operationType": "forceReplace", "record": {"recordName": "n"}}"#).savePolicy == .allKeys)
        #expect(try read(#"{"operationType": "forceDelete", "record": {"recordName": "n"}}"#).isDelete)
        #expect(try read(#"{"operationType": "update", "desiredKeys": null, "record": {"recordName": "n"}}"#).desiredKeys == .some(nil), "null: every field")

        let unnamed = try read(#"{"operationType": "create", "record": {"recordType": "Note"}}"#)
        #expect(unnamed.recordName == "generated" && unnamed.refusal == nil)
        let untyped = try read(#"{"operationType": "create", "record": {"recordName": "n9"}}"#)
        #expect(untyped.refusal?.reason == "record n9: create needs a recordType", "the record's own fault: refused in its place")

        #expect(refusal { _ = try read(#"{"operationType": "upsert", "record": {}}"#, at: 3) }
            == "operations[3].operationType must be create, update, forceUpdate, replace, forceReplace, delete or forceDelete")
        #expect(refusal { _ = try read(#"{"operationType": "update", "record": {}}"#, at: 1) } == "operations[1].record needs a recordName")
        #expect(refusal { _ = try read(#"{"operationType": "update", "record": {"recordName": "n", "fields": []}}"#) }
            == "operations[0].record.fields must be a dictionary of fields, not a list")
        #expect(refusal { _ = try read(#"{"operationType": "update", "record": {"recordName": "n", "recordChangeTag": 4}}"#) }
            == "operations[0].record.recordChangeTag must be a string, not a number")
        #expect(refusal { _ = try read(#"{"operationType": "update", "record": {"recordName": "n", "parent": {}}}"#) }
            == "operations[0].record.parent needs a recordName")
        #expect(refusal { _ = try read(#"{"operationType": "update", "desiredKeys": "title", "record": {"recordName": "n"}}"#) }
            == "operations[0].desiredKeys: desiredKeys must be a list of field names, not a string")
    }

    @Test("a share record: its names (both spellings of the type), its root from forRecord or its name, and a records/modify operation on it read into the sharing plan's change; a wrong member is that operation's error")
    func shareRecord() throws {
        #expect(WebServicesShareRecord.isShare(recordType: "cloudKit.share", recordName: "x"))
        #expect(WebServicesShareRecord.isShare(recordType: nil, recordName: "cloudkit.zoneshare"))
        #expect(WebServicesShareRecord.isShare(recordType: nil, recordName: "cloudkit.share.Trip1"))
        #expect(!WebServicesShareRecord.isShare(recordType: "Note", recordName: "n1"))
        #expect(WebServicesShareRecord.recordName(root: "Trip1") == "cloudkit.share.Trip1" && WebServicesShareRecord.recordName(root: nil) == "cloudkit.zoneshare")
        #expect(WebServicesShareRecord.shortGUID(ofURL: "https://canopy.example/share/abc123") == "abc123")
        #expect(WebServicesShareRecord.shortGUID(ofURL: "abc123") == nil)

        #expect(WebServicesShareRecord(operation: try json(#"{"record": {}}"#)) == nil)
        let created = try #require(WebServicesShareRecord(operation: try json(#"""
            {"operationType": "create", "record": {"recordType": "cloudkit.share", "forRecord": {"recordName": "Trip1"},
             "fields": {"cloudkit.title": {"value": "Trip"}}, "publicPermission": "READ_ONLY",
             "participants": [
               {"type": "USER", "permission": "READ_WRITE", "userIdentity": {"lookupInfo": {"emailAddress": "Bob@Example.com"}}},
               {"acceptanceStatus": "REMOVED", "userIdentity": {"lookupInfo": {"userRecordName": "_carol"}}}]}}
            """#)))
        #expect(created.recordName == "cloudkit.share.Trip1" && created.root == "Trip1")
        guard case .save(let save, let removals) = try created.change(),
              case .save(let setsTitle, let title, let permission, let participants, _) = save else {
            Issue.record("not a save")
            return
        }
        #expect(setsTitle && title == "Trip" && permission == "READ_ONLY")
        #expect(participants.map(\.email) == ["bob@example.com"] && participants.map(\.permission) == ["READ_WRITE"])
        #expect(removals == [.removeParticipant(userRecordName: "_carol", email: nil, phone: nil)])

        let deleted = try #require(WebServicesShareRecord(operation: try json(#"{"operationType": "forceDelete", "record": {"recordName": "cloudkit.zoneshare"}}"#)))
        #expect(deleted.root == nil)
        #expect(try deleted.change() == .delete)

        func refused(_ record: String, type: String = "update") -> String? {
            refusal { _ = try WebServicesShareRecord(operation: try json(#"{"operationType": "\#(type)", "record": \#(record)}"#))?.change() }
        }
        #expect(refused(#"{"recordName": "cloudkit.zoneshare"}"#, type: "upsert")?.hasPrefix("a share record's operationType is create, update") == true)
        #expect(refused(#"{"recordName": "cloudkit.zoneshare", "publicPermission": "ALL"}"#) == #"publicPermission is NONE, READ_ONLY or READ_WRITE, not "ALL""#)
        #expect(refused(#"{"recordName": "cloudkit.zoneshare", "participants": {}}"#) == "participants must be a list of share participant dictionaries, not an object")
        #expect(refused(#"{"recordName": "cloudkit.zoneshare", "participants": [{"userIdentity": {}}]}"#)
            == "participants[0] needs userIdentity.lookupInfo with emailAddress, phoneNumber or userRecordName")
        #expect(refused(#"{"recordName": "cloudkit.zoneshare", "fields": {"cloudkit.title": {"value": 3}}}"#) == "cloudkit.title's value must be a string, not a number")
    }

    @Test("the writers: an item's error, and a zone's dictionary around a plan's zone ID text with the sealed sync token")
    func writers() throws {
        let error = WebServicesWriter.itemError("zoneID", .string("z"), code: .zoneNotFound, reason: "gone", requestID: "r1")
        #expect(error == (try json(#"{"zoneID": "z", "serverErrorCode": "ZONE_NOT_FOUND", "reason": "gone", "uuid": "r1"}"#)))
        let zone = WebServicesWriter.zone(zoneIDText: #"{"zoneName":"Notes"}"#, syncToken: "t\"1")
        #expect(try json(zone) == (try json(#"{"zoneID": {"zoneName": "Notes"}, "atomic": true, "syncToken": "t\"1"}"#)))
        #expect(try json(WebServicesWriter.zone(zoneIDText: "{}", syncToken: nil)) == (try json(#"{"zoneID": {}, "atomic": true}"#)))
    }
}
