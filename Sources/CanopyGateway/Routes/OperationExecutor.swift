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
            return JSONValue.string(request.operation.operation == .mutation ? "Mutation" : "Query").jsonText
        case (.query, "me"):
            let plan = try MePlan(field)
            guard let json = try await single(plan.query) else {
                throw APIError(.notAuthenticated, "the token's user no longer exists")
            }
            return json
        case (.query, "zones"):
            return try await single(ZonesPlan(field, request: request).query)
        case (.mutation, "saveZone"):
            return try await single(SaveZonePlan(field, request: request).query)
        case (.mutation, "deleteZone"):
            let plan = try DeleteZonePlan(field, request: request)
            let touched = try await run(plan.query) { connection, query in
                try await connection.query(query, logger: logger).decode(Int.self).first { _ in true } ?? 0
            }
            guard touched > 0 else { throw zoneNotFound(field) }
            return "true"
        case (.query, "lookup"):
            let plan = try LookupPlan(field, request: request)
            let (found, json) = try await run(plan.query) { connection, query in
                try await connection.query(query, logger: logger).decode((Bool, String?).self).first { _ in true } ?? (false, nil)
            }
            guard found else { throw zoneNotFound(field) }
            return json
        case (.query, "records"):
            return try await records(field)
        case (.mutation, "modifyRecords"):
            return try await modifyRecords(ModifyRecordsPlan(field, request: request), field: field)
        default:
            throw APIError(.badRequest, "\(field.name) is part of the API contract but not served by this build of Canopy yet")
        }
    }

    func zoneNotFound(_ field: SelectedField) -> APIError {
        APIError(.zoneNotFound, "the zone does not exist", locations: request.location(of: field.field))
    }

    /// Runs one statement whose single row and column is JSON text.
    func single(_ query: PostgresQuery) async throws -> String? {
        try await run(query) { connection, query in
            try await connection.query(query, logger: logger).decode(String?.self).first { _ in true } ?? nil
        }
    }

    func run<T: Sendable>(_ query: PostgresQuery, _ body: @escaping @Sendable (PostgresConnection, PostgresQuery) async throws -> T) async throws -> T {
        try await database.withUser(userID, logger: logger, statementTimeout: configuration.statementTimeout) { connection in
            try await body(connection, query)
        }
    }

    func records(_ field: SelectedField) async throws -> String {
        let recordType = try RecordsPlan.recordType(of: field, request: request)
        let secret = SigningKey(try await database.secrets.key("cursor", logger: logger))
        let request = self.request
        let logger = self.logger
        return try await database.withUser(userID, logger: logger, statementTimeout: configuration.statementTimeout) { connection in
            var schema: RecordSchema = [:]
            for try await (name, type) in try await connection.query(
                "SELECT field_name, field_type FROM canopy.field_types WHERE record_type = \(recordType)", logger: logger
            ).decode((String, String).self) {
                schema[name] = FieldType(type)
            }
            let plan = try RecordsPlan(field, request: request, schema: schema, secret: secret)
            let row = try await connection.query(plan.query, logger: logger).decode((Bool, String?, String?, Bool).self).first { _ in true }
            guard let (found, records, lastKeys, more) = row, found else {
                throw APIError(.zoneNotFound, "the zone does not exist", locations: request.location(of: field.field))
            }
            return try plan.response(records: records, lastKeys: lastKeys, more: more, secret: secret)
        }
    }

    func modifyRecords(_ plan: ModifyRecordsPlan, field: SelectedField) async throws -> String {
        if plan.refusesWholeBatch {
            return try plan.response(plan.outcome(written: nil), records: [:])
        }
        let logger = self.logger
        let requestID = self.requestID
        do {
            return try await database.withUser(userID, logger: logger, statementTimeout: configuration.statementTimeout) { connection in
                let row = try await connection.query(plan.writeQuery, logger: logger).decode((Bool, String?).self).first { _ in true }
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
                    for try await (id, saved, server) in try await connection.query(plan.readQuery(ids: ids), logger: logger).decode((Int64, String?, String?).self) {
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
