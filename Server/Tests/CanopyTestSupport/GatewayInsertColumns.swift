/// The columns of a new row the gateway may choose, table by table, as
/// sql/policies grant them through canopy.grant_gateway_insert (DECISIONS
/// 166). One PostgreSQL holds them as column-level grants; on Citus the
/// a_gateway_columns triggers give every other column its default. Both
/// tiers check against this one list.
public enum GatewayInsertColumns {
    public static let granted: [String: Set<String>] = [
        "records": ["zone_id", "owner_id", "record_name", "record_type", "fields", "parent_name"],
        "zones": ["owner_id", "name"],
        "shares": ["zone_id", "owner_id", "root_record_id", "title", "public_permission", "allows_access_requests", "share_type", "thumbnail"],
        "participants": ["share_id", "owner_id", "user_id", "email", "phone", "role", "permission", "status", "accepted_at", "is_approved_requester"],
        "share_requests": ["share_id", "owner_id", "user_id", "status", "decided_at", "decided_by"],
        "uploads": ["token_hash", "sha256", "size", "content_type"],
        "push_deliveries": ["device_id", "user_id", "subscription_ids", "trace_parent"],
    ]
}
