import Foundation

/// Moving records between zones (docs/API.md §17; CloudKit has no such thing:
/// apps delete and re-create, losing identity and shares).
extension Database {
    /// What `move` did: the recordNames moved, or why nothing was.
    public struct MoveResult: Sendable {
        public let moved: [String]
        /// Per record: why the move was refused (nothing moved when any is).
        public let errors: [String: CanopyError]
    }

    /// Moves records, and with `withDescendants` every record below them by
    /// `parent`, to another zone in one transaction, keeping their
    /// recordNames, stamps and assets. `parent`: their new parent in the
    /// target (needed to move into a hierarchy share). Other devices see a
    /// deletion in the source zone and a new record in the target, so a
    /// `SyncEngine` converges without knowing about moves. Needs write
    /// access on both sides; a share's root moves only after its share is
    /// deleted.
    public func move(_ recordIDs: [Record.ID], to zoneID: RecordZone.ID, withDescendants: Bool = true, parent: String? = nil) async throws -> MoveResult {
        guard let source = recordIDs.first?.zoneID else { return MoveResult(moved: [], errors: [:]) }
        guard recordIDs.allSatisfy({ $0.zoneID == source }) else {
            throw CanopyError(.invalidArguments, "records move from one zone at a time")
        }
        let data = try await transport.execute(Documents.moveRecords, [
            "from": moveJSON(source), "to": moveJSON(zoneID),
            "names": .array(recordIDs.map { .string($0.recordName) }),
            "descendants": .bool(withDescendants), "parent": parent.map(JSON.string) ?? .null,
        ])
        let result = data["moveRecords"]
        var errors: [String: CanopyError] = [:]
        for error in result?["errors"]?.array ?? [] {
            guard let name = error["recordName"]?.string else { continue }
            errors[name] = .fromServer(code: error["code"]?.string ?? "", message: error["message"]?.string ?? "")
        }
        return MoveResult(moved: (result?["moved"]?.array ?? []).compactMap(\.string), errors: errors)
    }

    /// A zone as moveRecords names it: the caller's own (no ownerName) or another owner's.
    private func moveJSON(_ zoneID: RecordZone.ID) -> JSON {
        if zoneID.ownerName == CurrentUserDefaultName || databaseScope == .private {
            return .object(["zoneName": .string(zoneID.zoneName)])
        }
        return .object(["zoneName": .string(zoneID.zoneName), "ownerName": .string(zoneID.ownerName)])
    }
}
