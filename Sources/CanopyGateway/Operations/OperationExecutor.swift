import CanopyQuery
import CanopyStore
import Foundation
import GraphQL
import Logging
import PostgresNIO

/// Runs one root field of an operation: builds its plan (no I/O), runs the
/// plan's statements in one transaction acting for the caller, and returns
/// the field's JSON text.
struct OperationExecutor {
    let database: GatewayDatabase
    let configuration: GatewayConfiguration
    let request: ParsedRequest
    let userID: Int64
    let requestID: String
    let logger: Logger

    /// Thrown inside a transaction to roll it back and still answer.
    struct RollbackAndAnswer: Error {
        let json: String
    }

    func resolve(_ field: SelectedField) async throws -> String? {
        switch (request.operation.operation, field.name) {
        case (_, "__typename"):
            return GraphQLResponse.quoted(request.operation.operation == .mutation ? "Mutation" : "Query")
        case (.query, "me"):
            let plan = try MePlan(field)
            guard let json = try await readJSON(plan.query) else {
                throw APIError(.notAuthenticated, "the token's user no longer exists")
            }
            return json
        case (.query, "zones"):
            return try await readJSON(ZonesPlan(field, request: request).query)
        case (.mutation, "saveZone"):
            return try await single(SaveZonePlan(field, request: request).query)
        case (.mutation, "deleteZone"):
            let plan = try DeleteZonePlan(field, request: request)
            let touched = try await run(plan.query) { rows in
                try rows.first?.decode(Int.self) ?? 0
            }
            guard touched > 0 else { throw zoneNotFound(field) }
            return "true"
        case (.query, "lookup"):
            let plan = try LookupPlan(field, request: request)
            let (found, json) = try await read(plan.query) { rows in
                try rows.first?.decode((Bool, String?).self) ?? (false, nil)
            }
            guard found else { throw zoneNotFound(field) }
            return json
        case (.query, "records"):
            return try await records(field)
        case (.mutation, "modifyRecords"):
            return try await modifyRecords(ModifyRecordsPlan(field, request: request), field: field)
        case (.query, "share"):
            let plan = try SharePlan(field, request: request)
            let (found, json) = try await read(plan.query) { rows in
                try rows.first?.decode((Bool, String?).self) ?? (false, nil)
            }
            guard found else { throw zoneNotFound(field) }
            return json
        case (.query, "shareMetadata"):
            let plan = try ShareMetadataPlan(field, request: request)
            guard let json = try await readJSON(plan.query) else { throw shareNotOpen(field) }
            return json
        case (.mutation, "acceptShare"):
            let plan = try ShareMetadataPlan(field, request: request)
            let json = try await database.withUser(userID, logger: logger) { [logger] connection in
                _ = try await connection.execute(plan.accept, logger: logger)
                return try await connection.execute(plan.query, logger: logger).first?.decode(String?.self) ?? nil
            }
            guard let json else { throw shareNotOpen(field) }
            return json
        case (.query, "zoneChanges"):
            return try await zoneChanges(field).json
        case (.query, "databaseChanges"):
            return try await databaseChanges(field).json
        case (.subscription, _):
            throw APIError(.badRequest, "subscriptions are served over WebSocket at /graphql with the graphql-transport-ws protocol")
        case (.query, "discoverUser"):
            return try await readJSON(DiscoverUserPlan(field, request: request).query)
        case (.mutation, "saveShare"), (.mutation, "setParticipant"), (.mutation, "removeParticipant"),
             (.mutation, "deleteShare"), (.mutation, "leaveShare"):
            return try await changeShare(ShareMutationPlan(field, request: request), field: field)
        default:
            throw APIError(.badRequest, "\(field.name) is part of the API contract but not served by this build of Canopy yet")
        }
    }

    func zoneNotFound(_ field: SelectedField) -> APIError {
        APIError(.zoneNotFound, "the zone does not exist", locations: request.location(of: field.field))
    }

    /// The same answer for a share the caller may not open as for a URL
    /// that leads nowhere.
    func shareNotOpen(_ field: SelectedField) -> APIError {
        APIError(.permissionFailure, "no share at this URL that you may open", locations: request.location(of: field.field))
    }

    /// Runs a sharing mutation in one transaction: locate, change, read back.
    func changeShare(_ plan: ShareMutationPlan, field: SelectedField) async throws -> String? {
        let logger = self.logger
        let location = request.location(of: field.field)
        return try await database.withUser(userID, logger: logger) { connection in
            let located = try await connection.execute(plan.target.locate, logger: logger).first?.decode((Int64?, Int64?).self)
            guard let (zoneID, shareID) = located, let zoneID else {
                throw APIError(.zoneNotFound, "the zone does not exist", locations: location)
            }
            if plan.needsShare && shareID == nil {
                throw APIError(.unknownItem, "\(plan.target.description) is not shared", locations: location)
            }
            let changed = try await connection.execute(plan.change(zoneID: zoneID, shareID: shareID), logger: logger).first?.decode(Int64?.self) ?? nil
            switch plan.action {
            case .delete:
                return (changed ?? 0) > 0 ? "true" : "false"
            case .leave:
                guard (changed ?? 0) > 0 else {
                    throw APIError(.unknownItem, "you take part in no share of \(plan.target.description)", locations: location)
                }
                return "true"
            case .save:
                guard let changed else { throw APIError(.internalError, "saveShare returned no share", locations: location) }
                return try await connection.execute(plan.response(shareID: changed), logger: logger).first?.decode(String?.self) ?? nil
            case .setParticipant, .removeParticipant:
                return try await connection.execute(plan.response(shareID: shareID!), logger: logger).first?.decode(String?.self) ?? nil
            }
        }
    }

    /// Runs one writing statement whose single row and column is JSON text.
    func single(_ statement: SQLStatement) async throws -> String? {
        try await run(statement) { rows in
            try rows.first?.decode(String?.self) ?? nil
        }
    }

    /// Runs a read in one round trip; its single row and column is JSON text.
    func readJSON(_ query: SQLStatement) async throws -> String? {
        try await read(query) { rows in
            try rows.first?.decode(String?.self) ?? nil
        }
    }

    func read<T: Sendable>(_ statement: SQLStatement, _ collect: @escaping @Sendable ([PostgresRow]) throws -> T) async throws -> T {
        try await database.read(statement, as: userID, logger: logger, collect)
    }

    /// Runs one writing statement in a transaction acting for the caller.
    func run<T: Sendable>(_ statement: SQLStatement, _ collect: @escaping @Sendable ([PostgresRow]) throws -> T) async throws -> T {
        let logger = self.logger
        return try await database.withUser(userID, logger: logger) { connection in
            try collect(try await connection.execute(statement, logger: logger))
        }
    }

    func records(_ field: SelectedField) async throws -> String {
        let recordType = try RecordsPlan.recordType(of: field, request: request)
        let secret = SigningKey(try await database.secrets.key("cursor", logger: logger))
        let plan: RecordsPlan
        do {
            plan = try RecordsPlan(field, request: request, schema: try await schema(of: recordType, refresh: false), secret: secret)
        } catch let error as QueryError where error.code == .invalidArguments {
            // Perhaps a field saved since the types were read: read them again once.
            plan = try RecordsPlan(field, request: request, schema: try await schema(of: recordType, refresh: true), secret: secret)
        }
        let row = try await read(plan.query) { rows in
            try rows.first?.decode((Bool, String?, String?, Bool).self)
        }
        guard let (found, records, lastKeys, more) = row, found else {
            throw APIError(.zoneNotFound, "the zone does not exist", locations: request.location(of: field.field))
        }
        return try plan.response(records: records, lastKeys: lastKeys, more: more, secret: secret)
    }

    /// The key change tokens are signed with.
    func changeTokenKey() async throws -> SigningKey {
        SigningKey(try await database.secrets.key("change-token", logger: logger))
    }

    /// One page of a change feed: the field's JSON, the token it ends at,
    /// whether more follow and whether it reported anything.
    struct FeedPage: Sendable {
        var json: String
        var token: String
        var moreComing: Bool
        var isEmpty: Bool
        /// For a zone feed, the zone's id (which notifications name).
        var zoneID: Int64?
    }

    /// One page of a zone's change feed (`zoneChanges`, or a `zoneChanged`
    /// subscription continuing from `overridingSince`).
    func zoneChanges(_ field: SelectedField, overridingSince: String?? = .none) async throws -> FeedPage {
        let secret = try await changeTokenKey()
        let plan = try ZoneChangesPlan(field, request: request, userID: userID, secret: secret, overridingSince: overridingSince)
        let page = try await read(plan.query) { rows in
            try rows.first.map { ZoneChangesPlan.Page(try $0.decode((Int64?, Int64?, Int64?, Int64?, String?, String?, Int64?, Bool?).self)) }
        }
        guard let page, page.zoneID != nil else { throw zoneNotFound(field) }
        let (json, token) = try located(at: field) { try plan.response(page, secret: secret) }
        return FeedPage(json: json, token: ChangeToken.zone(token).encoded(secret: secret), moreComing: page.moreComing,
                        isEmpty: page.isEmpty, zoneID: page.zoneID)
    }

    /// One page of a database's change feed (`databaseChanges`, or a
    /// `databaseChanged` subscription continuing from `overridingSince`).
    func databaseChanges(_ field: SelectedField, overridingSince: String?? = .none) async throws -> FeedPage {
        let secret = try await changeTokenKey()
        let plan = try DatabaseChangesPlan(field, request: request, userID: userID, secret: secret, overridingSince: overridingSince)
        let page = try await read(plan.query) { rows in
            try rows.first.map { DatabaseChangesPlan.Page(try $0.decode((String?, String?, Bool, Int64?, Int64?, Int64?, String, Int64, Int64?).self)) }
        }
        guard let page else { throw APIError(.internalError, "databaseChanges returned no row") }
        let (json, token) = try located(at: field) { try plan.response(page, secret: secret) }
        return FeedPage(json: json, token: token, moreComing: page.moreComing, isEmpty: page.isEmpty)
    }

    /// Runs `body`, pointing a `QueryError` it throws at `field` (a token
    /// found expired only once the page was read, say).
    func located<T>(at field: SelectedField, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch var error as QueryError {
            error.locations = request.location(of: field.field)
            throw error
        }
    }

    func schema(of recordType: String, refresh: Bool) async throws -> RecordSchema {
        let stored = try await database.fieldTypes(of: recordType, refresh: refresh, logger: logger)
        return RecordSchema(
            fields: stored.compactMapValues(\.fieldSchema),
            mode: SchemaMode(rawValue: database.schemaMode) ?? .development
        )
    }

    func modifyRecords(_ plan: ModifyRecordsPlan, field: SelectedField) async throws -> String {
        if plan.refusesWholeBatch {
            return try plan.response(plan.outcome(written: nil), records: [:])
        }
        let logger = self.logger
        let requestID = self.requestID
        do {
            return try await database.withUser(userID, logger: logger) { connection in
                let row = try await connection.execute(plan.writeQuery, logger: logger).first?.decode((Bool, String?).self)
                guard let (found, text) = row, found, let text else {
                    throw APIError(.zoneNotFound, "the zone does not exist", locations: request.location(of: field.field))
                }
                let raw = try JSONDecoder().decode(ModifyRecordsPlan.RawResult.self, from: Data(text.utf8))
                let failures = raw.errors.map { error -> ModifyRecordsPlan.RecordFailure in
                    if let code = error.code {
                        return .init(recordName: error.recordName, code: code, message: error.message, serverRecordID: error.serverRecordId)
                    }
                    let mapped = APIError.fromDatabase(sqlState: error.sqlstate ?? "XX000", message: error.message, requestID: requestID, logger: logger)
                    return .init(recordName: error.recordName, code: mapped.code.rawValue, message: mapped.message)
                }
                let outcome = plan.outcome(written: .init(saved: raw.saved, deleted: raw.deleted, failures: failures))
                let ids = outcome.saved + outcome.failures.compactMap(\.serverRecordID)
                var records: [Int64: (saved: String?, server: String?)] = [:]
                if !ids.isEmpty {
                    for row in try await connection.execute(plan.readQuery(ids: ids), logger: logger) {
                        let (id, saved, server) = try row.decode((Int64, String?, String?).self)
                        records[id] = (saved, server)
                    }
                }
                let json = try plan.response(outcome, records: records)
                if plan.atomic && !outcome.failures.isEmpty {
                    throw RollbackAndAnswer(json: json)
                }
                return json
            }
        } catch let answer as RollbackAndAnswer {
            return answer.json
        }
    }
}
