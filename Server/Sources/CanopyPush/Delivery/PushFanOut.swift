import CanopyPlanner
import Foundation
import PostgresNIO

/// A committed change to a zone, from the outbox (`canopy.claim_push_outbox`).
struct OutboxEntry: Sendable {
    var id: Int64
    var zoneID: Int64
    var afterSeq: Int64
    var originUser: Int64?
    var originDevice: String?
    var committedFrom: Date
    /// The traced request's `traceparent` (migrations/0033), handed to the
    /// deliveries this change queues.
    var traceParent: String?

    static func decode(_ row: PostgresRow) throws -> OutboxEntry {
        let (id, zone, after, user, device, created, trace) = try row.decode((Int64, Int64, Int64, Int64?, String?, Date, String?).self)
        return OutboxEntry(id: id, zoneID: zone, afterSeq: after, originUser: user, originDevice: device, committedFrom: created, traceParent: trace)
    }
}

/// A subscription a change may fire (`canopy.push_candidates`).
struct PushCandidate: Sendable {
    var userID: Int64
    var subscriptionID: String
    var kind: String
    var recordType: String?
    var filter: String?
    var args: String?
    var firesOn: [String]

    static func decode(_ row: PostgresRow) throws -> PushCandidate {
        let (user, sid, kind, _, _, type, filter, args, fires) =
            try row.decode((Int64, String, String, String, Int64?, String?, String?, String?, [String]).self)
        return PushCandidate(userID: user, subscriptionID: sid, kind: kind, recordType: type, filter: filter, args: args, firesOn: fires)
    }

    var query: PushQuery? {
        guard kind == "QUERY", let recordType else { return nil }
        let values = args.flatMap { try? JSONValue(parsing: $0) }
        return PushQuery(recordType: recordType, filter: filter, args: values)
    }
}

/// The statement that decides, as one subscriber (row-level security on:
/// it runs in a transaction acting for them), which of their candidate
/// subscriptions a change fired, and queues a notification naming them on
/// each of their devices but the one that made the change. A subscriber who
/// cannot see the change (no longer a participant, outside a record share's
/// hierarchy) sees no row, so nothing fires: the access rule is the
/// database's, not a copy of it here.
enum PushFanOut {
    /// - Parameter predicates: each QUERY candidate's compiled filter, by
    ///   subscription ID (nil: match on the record type alone).
    static func statement(
        _ candidates: [PushCandidate], entry: OutboxEntry, predicates: [String: CheckedPredicate]
    ) -> SQLStatement {
        var builder = SQLBuilder()
        let zone = builder.bind(entry.zoneID), after = builder.bind(entry.afterSeq), start = builder.bind(entry.committedFrom)
        let records: SQL = "FROM canopy.records r WHERE r.zone_id = \(zone) AND r.change_seq > \(after)"
        let tombstones: SQL = "FROM canopy.tombstones t WHERE t.zone_id = \(zone) AND t.change_seq > \(after)"
        // An access request made in the change (issue 38) fires the zone's
        // deciders: only a share's owner and administrators read its requests.
        // Joined on the owner too, so on Citus the join stays on each shard.
        let anyChange: SQL = """
            (EXISTS (SELECT 1 \(records)) OR EXISTS (SELECT 1 \(tombstones)) \
            OR EXISTS (SELECT 1 FROM canopy.zone_departures d WHERE d.zone_id = \(zone) AND d.change_seq > \(after) \
            AND d.user_id = canopy.current_user_id()) \
            OR EXISTS (SELECT 1 FROM canopy.share_requests q \
            JOIN canopy.shares s ON s.owner_id = q.owner_id AND s.id = q.share_id \
            WHERE s.zone_id = \(zone) AND q.status = 'PENDING' AND q.requested_at >= \(start) \
            AND q.user_id <> canopy.current_user_id()))
            """
        var branches: [SQL] = []
        for candidate in candidates {
            let sid = builder.bind(candidate.subscriptionID)
            var condition = anyChange
            if let query = candidate.query {
                let type = builder.bind(query.recordType)
                let filter = predicates[candidate.subscriptionID].map { PredicateSQL.write($0, &builder) } ?? "TRUE"
                let events = Set(candidate.firesOn)
                var tests: [SQL] = []
                if events.contains("CREATE") || events.contains("UPDATE") {
                    // Records' stamps are whole milliseconds (DECISIONS 109):
                    // the transaction's start is compared at that precision.
                    let since: SQL = "date_trunc('milliseconds', \(start)::timestamptz)"
                    let age: SQL = events.isSuperset(of: ["CREATE", "UPDATE"]) ? "TRUE"
                        : events.contains("CREATE") ? "r.created_at >= \(since)" : "r.created_at < \(since)"
                    tests.append("EXISTS (SELECT 1 \(records) AND r.record_type = \(type) AND \(age) AND \(filter))")
                }
                if events.contains("DELETE") {
                    tests.append("EXISTS (SELECT 1 \(tombstones) AND t.record_type = \(type) AND t.kind = 'deleted')")
                }
                condition = tests.isEmpty ? "FALSE" : "(\(tests.joined(separator: " OR ")))"
            }
            branches.append("SELECT \(sid)::text AS sid WHERE \(condition)")
        }
        let device = builder.bind(entry.originDevice), origin = builder.bind(entry.originUser)
        let trace = builder.bind(entry.traceParent)
        // The latest traced change's trace is the one a merged notification carries.
        builder.append("""
            WITH fired AS (\(branches.joined(separator: " UNION ALL "))), \
            merged AS (SELECT array_agg(DISTINCT sid) AS sids FROM fired) \
            INSERT INTO canopy.push_deliveries AS q (device_id, user_id, subscription_ids, trace_parent) \
            SELECT d.id, d.user_id, merged.sids, \(trace)::text FROM merged, canopy.push_devices d \
            WHERE merged.sids IS NOT NULL AND d.user_id = canopy.current_user_id() \
            AND NOT (d.id = \(device)::uuid AND d.user_id = \(origin)::bigint) IS TRUE \
            ON CONFLICT (device_id) DO UPDATE SET \
            subscription_ids = ARRAY(SELECT DISTINCT x FROM unnest(q.subscription_ids || EXCLUDED.subscription_ids) x ORDER BY 1), \
            version = q.version + 1, trace_parent = coalesce(EXCLUDED.trace_parent, q.trace_parent) \
            RETURNING q.device_id::text
            """)
        return builder.query
    }
}
