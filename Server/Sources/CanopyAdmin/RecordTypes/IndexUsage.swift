import Foundation
import Logging
import PostgresNIO

/// One index on `canopy.records` as `canopy schema indexes` reports it:
/// what it serves, what it occupies, and whether anything has read it. Every
/// saved record pays for every index; this is how a team sees which ones
/// they pay for without a query that needs them.
public struct IndexUsage: Sendable, Equatable {
    /// Who asked for the index: Canopy itself, or a declared field.
    public enum Origin: Sendable, Equatable {
        /// Kept by Canopy for what every app does (names, feeds, sharing).
        case base(purpose: String)
        /// Built by `canopy schema apply` for a declared field.
        case declared(recordType: String, fieldName: String, kind: String)
    }

    public var name: String
    public var origin: Origin
    public var bytes: Int64
    /// Index scans since the statistics were last reset (pg_stat_user_indexes.idx_scan).
    public var scans: Int64

    public init(name: String, origin: Origin, bytes: Int64, scans: Int64) {
        self.name = name
        self.origin = origin
        self.bytes = bytes
        self.scans = scans
    }

    /// What the base indexes of migrations/baseline are for.
    static let basePurposes: [String: String] = [
        "records_pkey": "the record's id, with its zone's owner (primary key: migrations/0040)",
        "records_zone_id_record_name_key": "recordName within a zone: lookup, saves, parents (unique)",
        "records_id_zone_owner_key": "shares' root records (foreign key target, with the zone's owner: migrations/0039)",
        "records_zone_type_name_idx": "records of a type in recordName order (queries without a declared sort)",
        "records_zone_parent_idx": "a record's children (hierarchy shares)",
        "records_share_idx": "the records of a record-rooted share",
        "records_zone_change_idx": "the change feed (zoneChanges)",
    ]
}

/// The statistics behind `canopy schema indexes`.
public struct IndexUsageReport: Sendable {
    public var indexes: [IndexUsage]
    /// Since when the scan counts run (pg_stat_database.stats_reset; nil: since the cluster was created).
    public var countingSince: Date?

    /// Every index on canopy.records, declared ones by record type and field, then the base ones.
    public static func read(connection: PostgresConnection, logger: Logger) async throws -> IndexUsageReport {
        let rows = try await connection.query("""
            SELECT c.relname::text, pg_relation_size(c.oid)::int8, coalesce(s.idx_scan, 0)::int8,
                   d.record_type, d.field_name, d.kind
              FROM pg_index i
              JOIN pg_class c ON c.oid = i.indexrelid
              LEFT JOIN pg_stat_user_indexes s ON s.indexrelid = i.indexrelid
              LEFT JOIN canopy.schema_indexes d ON d.index_name = c.relname
             WHERE i.indrelid = 'canopy.records'::regclass
             ORDER BY d.record_type NULLS LAST, d.field_name, d.kind, c.relname
            """, logger: logger)
        var indexes: [IndexUsage] = []
        for try await (name, bytes, scans, recordType, fieldName, kind) in rows.decode((String, Int64, Int64, String?, String?, String?).self) {
            let origin: IndexUsage.Origin
            if let recordType, let fieldName, let kind {
                origin = .declared(recordType: recordType, fieldName: fieldName, kind: kind)
            } else {
                origin = .base(purpose: IndexUsage.basePurposes[name] ?? "not Canopy's: created outside schema apply")
            }
            indexes.append(IndexUsage(name: name, origin: origin, bytes: bytes, scans: scans))
        }
        let reset = try await connection.query(
            "SELECT stats_reset FROM pg_stat_database WHERE datname = current_database()", logger: logger
        ).collect().first?.decode(Date?.self) ?? nil
        return IndexUsageReport(indexes: indexes, countingSince: reset)
    }
}
