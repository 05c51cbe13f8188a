import Foundation

/// One of the user's three views of the server (CKDatabase): `.private`,
/// the user's own zones; `.shared`, what others shared and the user
/// accepted; `.public`, the app's public database (one zone,
/// `RecordZone.ID.default`, whose record types' grants decide who reads
/// and writes). Row-level security on the server decides what each shows.
public struct Database: Sendable {
    /// CKDatabase.Scope.
    public enum Scope: String, Sendable, Codable {
        case `private` = "PRIVATE"
        case shared = "SHARED"
        case `public` = "PUBLIC"
    }

    /// How a save treats the server's copy (CKModifyRecordsOperation.RecordSavePolicy).
    public enum SavePolicy: String, Sendable {
        /// Refuse the save when the record changed since it was fetched (`serverRecordChanged`).
        case ifServerRecordUnchanged = "IF_SERVER_RECORD_UNCHANGED"
        /// Write only the keys changed since the fetch, over whatever the server has.
        case changedKeys = "CHANGED_KEYS"
        /// Replace the server's fields with the record's.
        case allKeys = "ALL_KEYS"
    }

    public let container: Container
    public let databaseScope: Scope

    init(container: Container, scope: Scope) {
        self.container = container
        self.databaseScope = scope
    }

    var transport: GraphQLTransport { container.transport }
    var scopeJSON: JSON { .string(databaseScope.rawValue) }

    /// A zone as the app addresses it: its own zones with `CurrentUserDefaultName`.
    func zoneID(fromServer json: JSON?) -> RecordZone.ID? {
        guard let name = json?["zoneName"]?.string, let owner = json?["ownerName"]?.string else { return nil }
        return RecordZone.ID(zoneName: name, ownerName: databaseScope == .shared ? owner : CurrentUserDefaultName)
    }

    func requireSharedOwner(_ zoneID: RecordZone.ID) throws {
        if databaseScope == .shared, zoneID.ownerName == CurrentUserDefaultName {
            throw CanopyError(.invalidArguments, "a zone in the shared database needs its owner's name (\(zoneID.zoneName))")
        }
    }
}

// MARK: - Zones

extension Database {
    /// Every zone this database shows (CKDatabase.allRecordZones()).
    public func allRecordZones() async throws -> [RecordZone] {
        let data = try await transport.execute(Documents.zones, ["scope": scopeJSON])
        return (data["zones"]?.array ?? []).compactMap { zone in
            zoneID(fromServer: zone).map { RecordZone(zoneID: $0, shareURL: zone["share"]?["url"]?.string.flatMap(URL.init(string:))) }
        }
    }

    /// Creates a zone in the private database; saving one that exists changes nothing (CKDatabase.save(_:)).
    @discardableResult
    public func save(_ zone: RecordZone) async throws -> RecordZone {
        if databaseScope == .public {
            throw CanopyError(.badDatabase, "the public database has one zone, _defaultZone (RecordZone.ID.default), and no zones of its own")
        }
        guard databaseScope == .private else {
            throw CanopyError(.permissionFailure, "zones are created in the private database")
        }
        let data = try await transport.execute(Documents.saveZone, ["zoneName": .string(zone.zoneID.zoneName)])
        guard let id = zoneID(fromServer: data["saveZone"]) else { throw CanopyError(.serverResponseLost, "no zone in the answer") }
        return RecordZone(zoneID: id, shareURL: data["saveZone"]?["share"]?["url"]?.string.flatMap(URL.init(string:)))
    }

    /// Deletes a zone and its records; in the shared database, leaves the share instead (CKDatabase.deleteRecordZone(withID:)).
    public func deleteRecordZone(withID zoneID: RecordZone.ID) async throws {
        try requireSharedOwner(zoneID)
        _ = try await transport.execute(Documents.deleteZone, ["scope": scopeJSON, "zone": zoneID.json])
    }

    /// Saves and deletes zones (CKDatabase.modifyRecordZones(saving:deleting:)).
    public func modifyRecordZones(saving zonesToSave: [RecordZone], deleting zoneIDsToDelete: [RecordZone.ID]) async throws
        -> (saveResults: [RecordZone.ID: Result<RecordZone, CanopyError>], deleteResults: [RecordZone.ID: Result<Void, CanopyError>]) {
        var saved: [RecordZone.ID: Result<RecordZone, CanopyError>] = [:]
        var deleted: [RecordZone.ID: Result<Void, CanopyError>] = [:]
        for zone in zonesToSave {
            do { saved[zone.zoneID] = .success(try await save(zone)) } catch let error as CanopyError { saved[zone.zoneID] = .failure(error) }
        }
        for id in zoneIDsToDelete {
            do { try await deleteRecordZone(withID: id); deleted[id] = .success(()) } catch let error as CanopyError { deleted[id] = .failure(error) }
        }
        return (saved, deleted)
    }
}

// MARK: - Fetching records

extension Database {
    /// One record (CKDatabase.record(for:)); `unknownItem` when it does not exist or is not the caller's to read.
    public func record(for recordID: Record.ID, desiredKeys: [String]? = nil) async throws -> Record {
        guard let result = try await records(for: [recordID], desiredKeys: desiredKeys)[recordID] else {
            throw CanopyError(.unknownItem, "no record \(recordID)")
        }
        return try result.get()
    }

    /// Several records, each found or not (CKDatabase.records(for:desiredKeys:)).
    public func records(for recordIDs: [Record.ID], desiredKeys: [String]? = nil) async throws -> [Record.ID: Result<Record, CanopyError>] {
        var results: [Record.ID: Result<Record, CanopyError>] = [:]
        let byZone = Dictionary(grouping: recordIDs, by: \.zoneID)
        for (zoneID, ids) in byZone {
            try requireSharedOwner(zoneID)
            for start in stride(from: 0, to: ids.count, by: 400) {
                let chunk = ids[start..<min(start + 400, ids.count)]
                let data = try await transport.execute(Documents.lookup, [
                    "scope": scopeJSON, "zone": zoneID.json, "names": .array(chunk.map { .string($0.recordName) }),
                    "keys": desiredKeys.map { .array($0.map(JSON.string)) } ?? .null,
                ])
                for item in data["lookup"]?.array ?? [] {
                    guard let name = item["recordName"]?.string else { continue }
                    let id = Record.ID(recordName: name, zoneID: zoneID)
                    if let record = item["record"], !record.isNull {
                        let fetched = try Record(json: record, zoneID: zoneID)
                        try await container.localizeAssets(of: fetched)
                        results[id] = .success(fetched)
                    } else {
                        let error = item["error"]
                        results[id] = .failure(.fromServer(code: error?["code"]?.string ?? "UNKNOWN_ITEM",
                                                           message: error?["message"]?.string ?? "no record \(name)"))
                    }
                }
            }
        }
        return results
    }

    /// Records of a type matching a predicate, sorted, one page at a time
    /// (CKDatabase.records(matching:inZoneWith:desiredKeys:resultsLimit:)).
    public func records(matching query: Query, inZoneWith zoneID: RecordZone.ID = .default, desiredKeys: [String]? = nil,
                        resultsLimit: Int = Query.maximumResults) async throws
        -> (matchResults: [(Record.ID, Result<Record, CanopyError>)], queryCursor: Query.Cursor?) {
        try await page(query: query, zoneID: zoneID, cursor: nil, desiredKeys: desiredKeys, resultsLimit: resultsLimit)
    }

    /// The next page after a cursor (CKDatabase.records(continuingMatchFrom:desiredKeys:resultsLimit:)).
    public func records(continuingMatchFrom cursor: Query.Cursor, desiredKeys: [String]? = nil,
                        resultsLimit: Int = Query.maximumResults) async throws
        -> (matchResults: [(Record.ID, Result<Record, CanopyError>)], queryCursor: Query.Cursor?) {
        try await page(query: cursor.query, zoneID: cursor.zoneID, cursor: cursor.value, desiredKeys: desiredKeys, resultsLimit: resultsLimit)
    }

    private func page(query: Query, zoneID: RecordZone.ID, cursor: String?, desiredKeys: [String]?, resultsLimit: Int) async throws
        -> (matchResults: [(Record.ID, Result<Record, CanopyError>)], queryCursor: Query.Cursor?) {
        try requireSharedOwner(zoneID)
        var variables: [String: JSON] = [
            "scope": scopeJSON, "zone": zoneID.json, "type": .string(query.recordType),
            "limit": .int(Int64(max(1, min(resultsLimit, Query.maximumResults)))),
            "keys": desiredKeys.map { .array($0.map(JSON.string)) } ?? .null,
            "sort": .array(query.sortDescriptors.map {
                .object(["field": .string($0.key), "direction": .string($0.ascending ? "ASC" : "DESC")])
            }),
        ]
        if !query.predicate.isTrue {
            variables["filter"] = .string(query.predicate.format)
            variables["args"] = try query.predicate.argumentsJSON(in: zoneID)
        }
        if let cursor { variables["cursor"] = .string(cursor) }
        let data = try await transport.execute(Documents.records, variables)
        var results: [(Record.ID, Result<Record, CanopyError>)] = []
        for json in data["records"]?["records"]?.array ?? [] {
            let record = try Record(json: json, zoneID: zoneID)
            try await container.localizeAssets(of: record)
            results.append((record.recordID, .success(record)))
        }
        let next = data["records"]?["cursor"]?.string.map { Query.Cursor(value: $0, query: query, zoneID: zoneID) }
        return (results, next)
    }
}

// MARK: - Saving and deleting records

extension Database {
    /// Saves one record (CKDatabase.save(_:)) with `.ifServerRecordUnchanged`;
    /// a conflict throws `serverRecordChanged` carrying the server's record.
    @discardableResult
    public func save(_ record: Record) async throws -> Record {
        let (saved, _) = try await modifyRecords(saving: [record], deleting: [])
        return try saved[record.recordID]!.get()
    }

    /// Deletes one record (CKDatabase.deleteRecord(withID:)).
    public func deleteRecord(withID recordID: Record.ID) async throws {
        let (_, deleted) = try await modifyRecords(saving: [], deleting: [recordID])
        try deleted[recordID]!.get()
    }

    /// Saves and deletes records with a result for each
    /// (CKDatabase.modifyRecords(saving:deleting:savePolicy:atomically:)).
    /// Records of one zone go in one request (at most 400 saves and
    /// deletes); `atomically` makes that request all or nothing. Records
    /// in several zones make one request a zone, each atomic on its own.
    /// A saved record takes the server's change tag and dates, so it can
    /// be changed and saved again.
    public func modifyRecords(saving recordsToSave: [Record], deleting recordIDsToDelete: [Record.ID],
                              savePolicy: SavePolicy = .ifServerRecordUnchanged, atomically: Bool = true) async throws
        -> (saveResults: [Record.ID: Result<Record, CanopyError>], deleteResults: [Record.ID: Result<Void, CanopyError>]) {
        var saveResults: [Record.ID: Result<Record, CanopyError>] = [:]
        var deleteResults: [Record.ID: Result<Void, CanopyError>] = [:]
        let zones = Set(recordsToSave.map(\.recordID.zoneID)).union(recordIDsToDelete.map(\.zoneID))
        for zoneID in zones.sorted(by: { $0.zoneName < $1.zoneName }) {
            try requireSharedOwner(zoneID)
            let saves = recordsToSave.filter { $0.recordID.zoneID == zoneID }
            let deletes = recordIDsToDelete.filter { $0.zoneID == zoneID }
            for record in saves { try await container.uploadAssets(of: record) }
            let data = try await transport.execute(Documents.modifyRecords, [
                "scope": scopeJSON, "zone": zoneID.json,
                "save": .array(try saves.map { try $0.input(policy: savePolicy) }),
                "delete": .array(deletes.map { .string($0.recordName) }),
                "policy": .string(savePolicy.rawValue), "atomic": .bool(atomically), "keys": .null,
            ])
            let result = data["modifyRecords"]
            var errors: [String: CanopyError] = [:]
            for error in result?["errors"]?.array ?? [] {
                guard let name = error["recordName"]?.string else { continue }
                let server = try error["serverRecord"].flatMap { $0.isNull ? nil : try Record(json: $0, zoneID: zoneID) }
                errors[name] = .fromServer(code: error["code"]?.string ?? "INTERNAL_ERROR", message: error["message"]?.string ?? "",
                                           serverRecord: server)
            }
            var saved: [String: Record] = [:]
            for json in result?["saved"]?.array ?? [] {
                let record = try Record(json: json, zoneID: zoneID)
                saved[record.recordID.recordName] = record
            }
            let deletedNames = Set((result?["deleted"]?.array ?? []).compactMap(\.string))
            for record in saves {
                let name = record.recordID.recordName
                if let server = saved[name] {
                    record.adoptSystemFields(of: server)
                    saveResults[record.recordID] = .success(record)
                } else {
                    saveResults[record.recordID] = .failure(errors[name] ?? CanopyError(.batchRequestFailed, "\(name) was not saved"))
                }
            }
            for id in deletes {
                if deletedNames.contains(id.recordName) {
                    deleteResults[id] = .success(())
                } else {
                    deleteResults[id] = .failure(errors[id.recordName] ?? CanopyError(.batchRequestFailed, "\(id.recordName) was not deleted"))
                }
            }
        }
        return (saveResults, deleteResults)
    }
}
