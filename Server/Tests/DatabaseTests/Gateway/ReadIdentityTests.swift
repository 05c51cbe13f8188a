@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyGateway
import CanopyPlanner
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import Logging
import PostgresNIO
import Testing

/// One read statement serves every user: the identity is a parameter of
/// the statement, set by the statement itself.
@Suite("Reads carry their identity")
struct ReadIdentityTests {
    @Test("the same statement read as different users answers for each")
    func identityIsAParameter() async throws {
        try await withOneConnection { database, alice, bob in
            var answers: [String?] = []
            var texts = Set<String>()
            for (user, key) in [(alice.id, "a"), (bob.id, "b"), (alice.id, "c")] {
                let request = try ParsedRequest(query: "{ me { \(key): name } }")
                let statement = try MePlan(try request.rootFields()[0]).statement
                texts.insert(statement.sql)
                answers.append(try await database.read(statement, as: user, logger: TestDatabase.logger) { rows in
                    try rows.first?.decode(String?.self) ?? nil
                })
            }
            #expect(answers == ["{\"a\" : \"alice\"}", "{\"b\" : \"bob\"}", "{\"c\" : \"alice\"}"], "each read acts for its own user")
            #expect(texts.count == 1, "one shape, one SQL text")
        }
    }
}

/// Runs `body` with a gateway pool of one connection, as alice and bob.
func withOneConnection(_ body: @Sendable (RequestDatabase, UserSummary, UserSummary) async throws -> Void) async throws {
    let endpoint = try await TestDatabase.shared.migratedDatabase()
    let (alice, _) = try await addUser("alice", on: endpoint)
    let (bob, _) = try await addUser("bob", on: endpoint)
    let database = try RequestDatabase(endpoint: endpoint.asUser("canopy_gateway", password: nil), maximumConnections: 1, logger: TestDatabase.logger)
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await database.primary.run() }
        defer { group.cancelAll() }
        try await body(database, alice, bob)
    }
}

/// Statements are prepared once per connection and shape, then reused:
/// PostgreSQL's own view of the session's prepared statements shows one
/// statement executed once per request, whatever the values and the user.
@Suite("Statements reused by shape")
struct PreparedShapeTests {
    @Test("one connection, one shape, five requests by two users: one prepared statement run five times")
    func reusedByShape() async throws {
        try await withOneConnection { database, alice, bob in
            // A shape no other test uses, so its number is this test's alone.
            let document = "{ zones(scope: PRIVATE) { reusedByShape: zoneName } }"
            var sql: String?
            for (index, user) in [alice.id, bob.id, alice.id, bob.id, bob.id].enumerated() {
                let request = try ParsedRequest(query: document)
                let statement = try ZonesPlan(try request.rootFields()[0], request: request).statement
                let json = try await database.read(statement, as: user, logger: TestDatabase.logger) { rows in
                    try rows.first?.decode(String?.self) ?? nil
                }
                #expect(json?.contains("_defaultZone") == true, "request \(index) answers")
                sql = statement.sql
            }
            let prepared: PostgresQuery = """
                SELECT name, generic_plans + custom_plans FROM pg_prepared_statements \
                WHERE strpos(statement, \(sql ?? "")) > 0
                """
            let rows = try await database.client.withConnection { connection in
                try await connection.query(prepared, logger: TestDatabase.logger).collect().map { try $0.decode((String, Int64).self) }
            }
            #expect(rows.count == 1, "one prepared statement for the shape: \(rows)")
            #expect(rows.first?.0.hasPrefix("canopy_shape_") == true)
            #expect(rows.first?.1 == 5, "executed once per request")
        }
    }
}

/// Identity travels inside each read statement and ends with it: on pooled,
/// reused connections, interleaved requests of two users never see each
/// other's zones.
@Suite("Identity on pooled connections")
struct PooledIdentityTests {
    @Test("200 interleaved concurrent reads by two users each see only their own zones")
    func interleaved() async throws {
        let harness = try await GatewayHarness.make()
        // 200 requests queue for 4 connections while the other suites load
        // the machine: a generous wait, so that what is measured is identity,
        // not capacity (a wait past it is a 503, reported below as such).
        try await harness.test(availabilityTimeout: .seconds(120)) { client in
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"AliceOnly\") { zoneName } }", token: harness.aliceToken)
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"BobOnly\") { zoneName } }", token: harness.bobToken)
            let wrong = try await withThrowingTaskGroup(of: String?.self) { group in
                for index in 0..<200 {
                    let (token, own, other) = index % 2 == 0
                        ? (harness.aliceToken, "AliceOnly", "BobOnly") : (harness.bobToken, "BobOnly", "AliceOnly")
                    group.addTask {
                        let answer = try await client.call("zones", "{ zones(scope: PRIVATE) { zoneName } }", token: token)
                        let names = answer.list.compactMap { $0["zoneName"] as? String }
                        if names.contains(other) { return "leak: \(names)" }
                        return names.contains(own) ? nil : "no answer: \(answer.status) \(answer.body)"
                    }
                }
                return try await group.reduce(into: [String]()) { if let failure = $1 { $0.append(failure) } }
            }
            #expect(wrong.isEmpty, "\(wrong.count) of 200 wrong: \(wrong.prefix(3))")
        }
    }
}

/// Plans own their rows: each plan's statement, run as the gateway runs it,
/// decodes with the plan's own `decode` and answers through `answer`.
@Suite("Plans decode their own rows")
struct PlanRowTests {
    func run<Plan: FieldPlan>(_ plan: Plan, as user: Int64, _ database: RequestDatabase) async throws -> String? {
        let row = try await database.read(plan.statement, as: user, logger: TestDatabase.logger) { rows in
            try rows.first.map(Plan.decode)
        }
        return try plan.answer(row)
    }

    @Test("me, zones and lookup answer from their rows; an unknown zone is ZONE_NOT_FOUND at the field")
    func rows() async throws {
        try await withOneConnection { database, alice, _ in
            let me = try ParsedRequest(query: "{ me { name } }")
            #expect(try await run(MePlan(try me.rootFields()[0]), as: alice.id, database) == "{\"name\" : \"alice\"}")

            let zones = try ParsedRequest(query: "{ zones(scope: PRIVATE) { zoneName } }")
            #expect(try await run(ZonesPlan(try zones.rootFields()[0], request: zones), as: alice.id, database) == "[{\"zoneName\" : \"_defaultZone\"}]")

            let lookup = try ParsedRequest(query: "{\n  lookup(scope: PRIVATE, zone: {zoneName: \"Nowhere\"}, recordNames: [\"a\"]) { recordName } }")
            do {
                _ = try await run(LookupPlan(try lookup.rootFields()[0], request: lookup), as: alice.id, database)
                Issue.record("a zone that does not exist must not answer")
            } catch let error as QueryError {
                #expect(error.code == .zoneNotFound)
                #expect(error.locations == [QueryError.Location(line: 2, column: 3)])
            }

            let found = try ParsedRequest(query: "{ lookup(scope: PRIVATE, zone: {zoneName: \"_defaultZone\"}, recordNames: [\"a\"]) { recordName error { code } } }")
            let answer = try await run(LookupPlan(try found.rootFields()[0], request: found), as: alice.id, database)
            #expect(answer?.contains("\"UNKNOWN_ITEM\"") == true, "\(answer ?? "nil")")
        }
    }
}
