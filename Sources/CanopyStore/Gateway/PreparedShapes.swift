import Crypto
import Foundation
import PostgresNIO

/// The statements each pooled connection has prepared, by shape. A shape
/// is the SQL text (values are all parameters), so one prepared statement
/// serves every request of that shape on that connection, parsed once.
actor PreparedShapes {
    /// Beyond this many shapes on one connection, statements run unprepared.
    static let maximumPerConnection = 500

    private var prepared: [Int: [String: PreparedQuery]] = [:]

    nonisolated static func key(for sql: String) -> String {
        SHA256.hash(data: Data(sql.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    func statement(_ key: String, on connection: Int) -> PreparedQuery? {
        prepared[connection]?[key]
    }

    func hasRoom(on connection: Int) -> Bool {
        (prepared[connection]?.count ?? 0) < Self.maximumPerConnection
    }

    func store(_ statement: PreparedQuery, as key: String, on connection: Int) {
        prepared[connection, default: [:]][key] = statement
    }

    var count: Int { prepared.values.reduce(0) { $0 + $1.count } }

    func forget(_ key: String, on connection: Int) {
        prepared[connection]?[key] = nil
    }
}
