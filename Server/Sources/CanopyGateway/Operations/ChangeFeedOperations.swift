import CanopyEncoding
import CanopyPlanner
import CanopyRequestStore
import CanopyWAL

/// `zoneChanges`: one page of a zone's change feed.
struct ZoneChangesOperation: RootOperation {
    func resolve(_ field: SelectedField, _ executor: OperationExecutor) async throws -> String? {
        try await executor.zoneChanges(field).json
    }
}

/// `zoneRanges`: a zone's feed position and its records cut into ranges,
/// for a first sync read in parallel. Read where `zoneChanges` is: a
/// replica's snapshot is as good as the primary's, since every range token
/// carries the position it was read at and its pages wait for it.
struct ZoneRangesOperation: RootOperation {
    func resolve(_ field: SelectedField, _ executor: OperationExecutor) async throws -> String? {
        let secret = try await executor.changeTokenKey()
        let plan = try ZoneRangesPlan(field, request: executor.request, userID: executor.userID ?? ChangeToken.anonymousUser)
        let cut = try await executor.read(plan.statement, from: .replica(after: executor.readAfter)) { rows in
            try rows.first.map(ZoneRangesPlan.Cut.decode)
        }
        guard let cut, cut.zoneID != nil else { throw QueryError.zoneNotFound(at: executor.request.location(of: field.field)) }
        return try executor.located(at: field) { try plan.response(cut, secret: secret) }
    }
}

/// `databaseChanges`: one page of a database's change feed.
struct DatabaseChangesOperation: RootOperation {
    func resolve(_ field: SelectedField, _ executor: OperationExecutor) async throws -> String? {
        try await executor.databaseChanges(field).json
    }
}

/// The feeds' pages, shared by the queries and the WebSocket subscriptions
/// (`zoneChanged`, `databaseChanged`), which continue from the last token.
extension OperationExecutor {
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

    /// The key change tokens are signed with, and the keys it replaced.
    func changeTokenKey() async throws -> SigningKey {
        try await runner.changeTokenKey()
    }

    /// One page of a zone's change feed (`zoneChanges`, or a `zoneChanged`
    /// subscription continuing from `overridingSince`; `after`: a position
    /// the page must show, such as the primary's when a commit woke it).
    func zoneChanges(_ field: SelectedField, overridingSince: String?? = .none, after: WALPosition? = nil) async throws -> FeedPage {
        let secret = try await changeTokenKey()
        let plan = try ZoneChangesPlan(field, request: request, userID: userID ?? ChangeToken.anonymousUser, secret: secret, overridingSince: overridingSince)
        let source = RequestDatabase.ReadSource.replica(after: readAfter.later(plan.requiredPosition).later(after))
        let page = try await read(plan.statement, from: source) { rows in try rows.first.map(ZoneChangesPlan.Page.decode) }
        guard let page, page.zoneID != nil else { throw QueryError.zoneNotFound(at: request.location(of: field.field)) }
        let (json, token) = try located(at: field) { try plan.response(page, secret: secret) }
        return FeedPage(json: json, token: ChangeToken.zone(token).encoded(secret: secret), moreComing: page.moreComing,
                        isEmpty: page.isEmpty, zoneID: page.zoneID)
    }

    /// One page of a database's change feed (`databaseChanges`, or a
    /// `databaseChanged` subscription continuing from `overridingSince`).
    func databaseChanges(_ field: SelectedField, overridingSince: String?? = .none, after: WALPosition? = nil) async throws -> FeedPage {
        let secret = try await changeTokenKey()
        let plan = try DatabaseChangesPlan(field, request: request, userID: try signedInUser(), secret: secret, overridingSince: overridingSince)
        let source = RequestDatabase.ReadSource.replica(after: readAfter.later(plan.requiredPosition).later(after))
        let page = try await read(plan.statement, from: source) { rows in try rows.first.map(DatabaseChangesPlan.Page.decode) }
        guard let page else { throw APIError(.internalError, "databaseChanges returned no row") }
        let (json, token) = try located(at: field) { try plan.response(page, secret: secret) }
        return FeedPage(json: json, token: token, moreComing: page.moreComing, isEmpty: page.isEmpty)
    }
}
