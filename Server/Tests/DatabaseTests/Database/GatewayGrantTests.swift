@testable import CanopyGatewayTestSupport
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import PostgresNIO
import Testing

/// What the gateway role may run is what something runs: a function granted
/// to canopy_gateway that no policy, trigger, other function or gateway
/// statement calls is surface without use (issue 34 found three policy
/// helpers left so since memberships).
@Suite("grants to the gateway role")
struct GatewayGrantTests {
    /// Every text that may call a function: the repeatable SQL and the
    /// gateway's and planner's Swift.
    static func callers() throws -> [(path: String, text: String)] {
        let root = Repository.root
        var files: [(String, String)] = []
        for directory in ["sql", "Server/Sources"] {
            let base = "\(root)/\(directory)"
            guard let walker = FileManager.default.enumerator(atPath: base) else { continue }
            for case let path as String in walker where path.hasSuffix(".sql") || path.hasSuffix(".swift") {
                files.append(("\(directory)/\(path)", try String(contentsOfFile: "\(base)/\(path)", encoding: .utf8)))
            }
        }
        return files
    }

    @Test("every function canopy_gateway may execute in schema canopy is called somewhere besides its own definition and grants")
    func everyGrantedFunctionIsUsed() async throws {
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let granted = try await TestDatabase.withConnection(endpoint) { connection in
            try await connection.texts("""
                SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                 WHERE n.nspname = 'canopy' AND has_function_privilege('canopy_gateway', p.oid, 'EXECUTE')
                 ORDER BY 1
                """).compactMap { $0 }
        }
        #expect(granted.count > 10, "\(granted)")
        let callers = try Self.callers()
        var unused: [String] = []
        for name in Set(granted) {
            let used = callers.contains { file in
                file.text.split(separator: "\n").contains { line in
                    guard line.contains(name) else { return false }
                    let trimmed = line.trimmingCharacters(in: .whitespaces)
                    // Its own definition, grants and comment do not count.
                    return !["CREATE OR REPLACE FUNCTION canopy.\(name)(", "REVOKE ALL ON FUNCTION canopy.\(name)(",
                             "GRANT EXECUTE ON FUNCTION canopy.\(name)(", "COMMENT ON FUNCTION canopy.\(name)(", "--"]
                        .contains { trimmed.hasPrefix($0) }
                }
            }
            if !used { unused.append(name) }
        }
        #expect(unused.isEmpty, "granted to canopy_gateway but called nowhere: \(unused.sorted())")
    }

    /// On one PostgreSQL canopy.grant_gateway_insert grants columns: the
    /// gateway may name no other column of a new row, and no table it may
    /// insert is left out of GatewayInsertColumns (which the Citus tier's
    /// a_gateway_columns test reads).
    @Test("the gateway may insert exactly GatewayInsertColumns' columns of each table, and no other table's rows; a statement naming another column is refused")
    func insertColumnsAreGranted() async throws {
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let (granted, tablesWide, refused) = try await TestDatabase.withConnection(endpoint) { connection in
            let rows = try await connection.texts("""
                SELECT table_name || ' ' || column_name FROM information_schema.column_privileges
                 WHERE grantee = 'canopy_gateway' AND privilege_type = 'INSERT' AND table_schema = 'canopy'
                """).compactMap { $0 }
            var granted: [String: Set<String>] = [:]
            for row in rows {
                let parts = row.split(separator: " ").map(String.init)
                granted[parts[0], default: []].insert(parts[1])
            }
            let wide = try await connection.texts("""
                SELECT table_name FROM information_schema.table_privileges
                 WHERE grantee = 'canopy_gateway' AND privilege_type = 'INSERT' AND table_schema = 'canopy'
                """).compactMap { $0 }
            var refused = false
            do {
                try await TestDatabase.withConnection(endpoint.asUser("canopy_gateway", password: nil)) { gateway in
                    _ = try await gateway.texts("INSERT INTO canopy.zones (owner_id, name, feed_base) VALUES (0, 'x', 1)")
                }
            } catch let error as PSQLError {
                refused = error.serverInfo?[.sqlState] == "42501"
            }
            return (granted, Set(wide), refused)
        }
        // Tables granted whole (their rows hold nothing the gateway may not choose).
        let whole = tablesWide
        for (table, columns) in GatewayInsertColumns.granted {
            #expect(!whole.contains(table), "\(table) is granted whole")
            #expect(granted[table] == columns, "\(table): \(granted[table] ?? [])")
        }
        let columnGranted = Set(granted.keys).subtracting(whole)
        #expect(columnGranted == Set(GatewayInsertColumns.granted.keys), "tables the gateway inserts by column: \(columnGranted.sorted())")
        #expect(refused, "naming zones.feed_base is refused")
    }
}
