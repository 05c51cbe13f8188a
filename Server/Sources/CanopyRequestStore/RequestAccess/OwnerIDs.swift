import Logging
import PostgresNIO

/// Users' ids by record name, for the statements that name a zone's owner
/// by id where the request names the owner by record name (on Citus, which
/// routes and plans some statements only with the id as a value:
/// `SQLStatement.unboundOwners`, DECISIONS 176). The id is only where to
/// look: row-level security still decides what the caller may reach.
extension RequestDatabase {
    /// Each name's id, in order: nil for a nil name or one that is nobody's
    /// (no zone's owner is NULL, so the statement finds no zone). Ids found
    /// are remembered (``ownerIDsByName``); the rest are read in one round
    /// trip on the primary.
    public func ownerIDs(named names: [String?], logger: Logger) async throws -> [Int64?] {
        var found: [String: Int64] = [:]
        var missing: [String] = []
        for case let name? in names where found[name] == nil && !missing.contains(name) {
            if let id = ownerIDsByName.value(for: name) { found[name] = id } else { missing.append(name) }
        }
        if !missing.isEmpty {
            let unknown = missing
            let read = try await primary.withConnection { connection in
                try await connection.ownerIDs(named: unknown, logger: logger)
            }
            for (name, id) in read {
                ownerIDsByName.store(id, for: name)
                found[name] = id
            }
        }
        return names.map { $0.flatMap { found[$0] } }
    }
}

extension PostgresConnection {
    /// The ids of the users of these record names that exist, read on this
    /// connection (`canopy.owner_id_named`, which the gateway's role may run).
    public func ownerIDs(named names: [String], logger: Logger) async throws -> [String: Int64] {
        let rows = try await query(
            "SELECT n.name, canopy.owner_id_named(n.name) FROM unnest(\(names)::text[]) AS n(name)", logger: logger
        )
        var ids: [String: Int64] = [:]
        for try await (name, id) in rows.decode((String, Int64?).self) {
            if let id { ids[name] = id }
        }
        return ids
    }
}
