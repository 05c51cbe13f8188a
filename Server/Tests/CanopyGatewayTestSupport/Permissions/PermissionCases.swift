import CanopyAdmin
import CanopyRequestStore
import CanopyTestSupport
import PostgresNIO

/// What a statement run as `canopy_gateway` must do for one identity.
enum Outcome: Sendable, CustomStringConvertible {
    /// A query returning these values (first column), in order.
    case rows([String])
    /// A write (wrapped to return its row count) affecting this many rows.
    case affected(Int)
    /// Refused by PostgreSQL: row-level security, a missing grant, or a trigger guard.
    case denied

    var description: String {
        switch self {
        case .rows(let rows): return "rows \(rows)"
        case .affected(let count): return "affected \(count)"
        case .denied: return "denied"
        }
    }
}

/// One cell of the permission table: who, what, and what must happen.
struct PermissionCase: Sendable, CustomStringConvertible {
    let who: String
    let what: String
    let sql: String
    let outcome: Outcome
    var description: String { "\(who): \(what) → \(outcome)" }

    /// A plain SELECT of tables, calling none of the schema's functions:
    /// what runs on distributed tables before their writes do.
    var isRead: Bool {
        sql.hasPrefix("SELECT") && sql.range(of: #"canopy\.[a-z_]+\s*\("#, options: .regularExpression) == nil
    }
}

/// Builds cases: `sql` may use {me}, {NAME} (a user id), {zone:NAME}, {owner:NAME} (a zone's
/// owner: every insert of a zone's rows names it, as the gateway's do, DECISIONS 156), {share:TITLE}.
private func cases(_ what: String, _ sql: String, _ outcomes: [(String, Outcome)]) -> [PermissionCase] {
    outcomes.map { PermissionCase(who: $0.0, what: what, sql: sql, outcome: $0.1) }
}

private func count(_ write: String) -> String {
    "WITH w AS (\(write) RETURNING 1) SELECT count(*)::text FROM w"
}

private let sharedRecords: Outcome = .rows(["child", "grandchild", "log1", "root"])
private let aliceZones: Outcome = .rows(["Family", "Log", "_defaultZone"])
private let ownDefaultZone: Outcome = .rows(["_defaultZone"])
private let none: Outcome = .rows([])

let permissionCases: [PermissionCase] =
    // records
    cases("records: select", "SELECT record_name FROM canopy.records ORDER BY 1", [
        ("alice", .rows(["child", "grandchild", "log1", "private", "root"])), ("bob", .rows(["bob1"])),
        ("pending", none), ("reader", sharedRecords), ("writer", sharedRecords), ("admin", sharedRecords),
        ("public", sharedRecords), ("removed", none), ("stranger", none),
    ])
    + cases("records: insert into the zone-wide shared zone",
            "INSERT INTO canopy.records (zone_id, owner_id, record_name, record_type) VALUES ({zone:Log}, {owner:Log}, 'new', 'Entry') RETURNING record_name", [
        ("alice", .rows(["new"])), ("writer", .rows(["new"])), ("admin", .rows(["new"])),
        ("reader", .denied), ("public", .denied), ("pending", .denied), ("removed", .denied), ("stranger", .denied), ("bob", .denied),
    ])
    + cases("records: insert under a shared record",
            "INSERT INTO canopy.records (zone_id, owner_id, record_name, record_type, parent_name) VALUES ({zone:Family}, {owner:Family}, 'new', 'Item', 'child') RETURNING record_name", [
        ("alice", .rows(["new"])), ("writer", .rows(["new"])), ("admin", .rows(["new"])),
        ("reader", .denied), ("public", .denied), ("pending", .denied), ("removed", .denied), ("stranger", .denied), ("bob", .denied),
    ])
    + cases("records: insert under a record outside the share",
            "INSERT INTO canopy.records (zone_id, owner_id, record_name, record_type, parent_name) VALUES ({zone:Family}, {owner:Family}, 'new', 'Item', 'private') RETURNING record_name", [
        ("alice", .rows(["new"])), ("writer", .denied), ("admin", .denied),
    ])
    + cases("records: insert at the top of a record-shared zone",
            "INSERT INTO canopy.records (zone_id, owner_id, record_name, record_type) VALUES ({zone:Family}, {owner:Family}, 'new', 'Item') RETURNING record_name", [
        ("alice", .rows(["new"])), ("writer", .denied), ("admin", .denied),
    ])
    + cases("records: insert into another owner's unshared zone",
            "INSERT INTO canopy.records (zone_id, owner_id, record_name, record_type) VALUES ({zone:Bobs}, {owner:Bobs}, 'new', 'Item') RETURNING record_name", [
        ("bob", .rows(["new"])), ("alice", .denied), ("writer", .denied), ("stranger", .denied),
    ])
    + cases("records: update every visible record", count("UPDATE canopy.records SET fields = '{\"n\": 2}'"), [
        ("alice", .rows(["5"])), ("bob", .rows(["1"])), ("writer", .rows(["4"])), ("admin", .rows(["4"])),
        ("reader", .rows(["0"])), ("public", .rows(["0"])), ("pending", .rows(["0"])), ("removed", .rows(["0"])), ("stranger", .rows(["0"])),
    ])
    + cases("records: move a shared record out of the share",
            count("UPDATE canopy.records SET parent_name = 'private' WHERE record_name = 'child'"), [
        ("alice", .rows(["1"])), ("writer", .denied), ("admin", .denied), ("reader", .rows(["0"])),
    ])
    + cases("records: delete a shared record", count("DELETE FROM canopy.records WHERE record_name = 'child'"), [
        ("alice", .rows(["1"])), ("writer", .rows(["1"])), ("admin", .rows(["1"])),
        ("reader", .rows(["0"])), ("public", .rows(["0"])), ("pending", .rows(["0"])), ("removed", .rows(["0"])), ("stranger", .rows(["0"])), ("bob", .rows(["0"])),
    ])
    + cases("records: delete the share's root", count("DELETE FROM canopy.records WHERE record_name = 'root'"), [
        ("alice", .rows(["1"])), ("writer", .rows(["0"])), ("admin", .rows(["0"])), ("reader", .rows(["0"])),
    ])
    + cases("records: delete in the zone-wide share", count("DELETE FROM canopy.records WHERE record_name = 'log1'"), [
        ("alice", .rows(["1"])), ("writer", .rows(["1"])), ("reader", .rows(["0"])), ("public", .rows(["0"])), ("stranger", .rows(["0"])),
    ])
    + cases("records: forge the change tag", count("UPDATE canopy.records SET change_tag = 'x'"), [
        ("alice", .denied), ("writer", .denied),
    ])
    // zones
    + cases("zones: select", "SELECT name FROM canopy.zones WHERE owner_id <> 0 ORDER BY 1", [
        ("alice", aliceZones), ("bob", .rows(["Bobs", "_defaultZone"])), ("pending", ownDefaultZone),
        ("reader", aliceZones), ("writer", aliceZones), ("admin", aliceZones), ("public", aliceZones),
        ("removed", ownDefaultZone), ("stranger", ownDefaultZone),
    ])
    + cases("zones: the public zone, which everyone sees", "SELECT name FROM canopy.zones WHERE owner_id = 0", [
        ("alice", ownDefaultZone), ("bob", ownDefaultZone), ("pending", ownDefaultZone), ("stranger", ownDefaultZone),
    ])
    + cases("zones: delete the public zone", count("DELETE FROM canopy.zones WHERE owner_id = 0"), [
        ("alice", .rows(["0"])), ("stranger", .rows(["0"])),
    ])
    + cases("zones: create one's own", "INSERT INTO canopy.zones (owner_id, name) VALUES ({me}, 'Mine') RETURNING name", [
        ("alice", .rows(["Mine"])), ("stranger", .rows(["Mine"])), ("reader", .rows(["Mine"])),
    ])
    + cases("zones: create one for someone else", "INSERT INTO canopy.zones (owner_id, name) VALUES ({alice}, 'Evil') RETURNING name", [
        ("stranger", .denied), ("writer", .denied), ("admin", .denied),
    ])
    + cases("zones: delete a shared zone", count("DELETE FROM canopy.zones WHERE name = 'Family'"), [
        ("alice", .rows(["1"])), ("writer", .rows(["0"])), ("admin", .rows(["0"])), ("reader", .rows(["0"])), ("stranger", .rows(["0"])),
    ])
    + cases("zones: delete one's default zone", count("DELETE FROM canopy.zones WHERE name = '_defaultZone'"), [
        ("alice", .rows(["0"])), ("stranger", .rows(["0"])),
    ])
    + cases("zones: rename", count("UPDATE canopy.zones SET name = 'Renamed'"), [
        ("alice", .denied), ("writer", .denied),
    ])
    // shares
    + cases("shares: select", "SELECT title FROM canopy.shares ORDER BY 1", [
        ("alice", .rows(["Family tree", "Log"])), ("reader", .rows(["Family tree", "Log"])), ("writer", .rows(["Family tree", "Log"])),
        ("admin", .rows(["Family tree", "Log"])), ("public", .rows(["Family tree", "Log"])),
        ("pending", none), ("removed", none), ("stranger", none), ("bob", none),
    ])
    + cases("shares: share another owner's zone", "INSERT INTO canopy.shares (zone_id, owner_id) VALUES ({zone:Bobs}, {owner:Bobs}) RETURNING zone_id::text", [
        ("bob", .rows(["{zone:Bobs}"])), ("alice", .denied), ("writer", .denied), ("stranger", .denied),
    ])
    + cases("shares: change the title", count("UPDATE canopy.shares SET title = 'Mine now'"), [
        ("alice", .rows(["2"])), ("admin", .rows(["0"])), ("writer", .rows(["0"])), ("reader", .rows(["0"])), ("stranger", .rows(["0"])),
    ])
    + cases("shares: delete", count("DELETE FROM canopy.shares"), [
        ("alice", .rows(["2"])), ("admin", .rows(["0"])), ("writer", .rows(["0"])), ("public", .rows(["0"])), ("stranger", .rows(["0"])),
    ])
    + cases("shares: turn the public link off", count("UPDATE canopy.shares SET public_permission = 'NONE'"), [
        ("alice", .rows(["2"])), ("admin", .rows(["0"])),
    ])
    // participants
    + cases("participants: select", "SELECT count(*)::text FROM canopy.participants", [
        ("alice", .rows(["14"])), ("admin", .rows(["14"])), ("reader", .rows(["4"])), ("writer", .rows(["4"])), ("public", .rows(["4"])),
        ("pending", .rows(["0"])), ("removed", .rows(["0"])), ("stranger", .rows(["0"])), ("bob", .rows(["0"])),
    ])
    + cases("participants: others see only the owner and themselves",
            "SELECT DISTINCT role FROM canopy.participants WHERE user_id <> {me} ORDER BY 1", [
        ("reader", .rows(["OWNER"])), ("public", .rows(["OWNER"])),
        ("admin", .rows(["OWNER", "PRIVATE_USER", "PUBLIC_USER"])),
    ])
    + cases("participants: invite a private user",
            "INSERT INTO canopy.participants (share_id, owner_id, user_id, permission) VALUES ({share:Family tree}, {owner:Family}, {stranger}, 'READ_ONLY') RETURNING role", [
        ("alice", .rows(["PRIVATE_USER"])), ("admin", .rows(["PRIVATE_USER"])),
        ("writer", .denied), ("reader", .denied), ("public", .denied), ("pending", .denied), ("removed", .denied), ("stranger", .denied), ("bob", .denied),
    ])
    + cases("participants: invite an administrator",
            "INSERT INTO canopy.participants (share_id, owner_id, user_id, role, permission) VALUES ({share:Family tree}, {owner:Family}, {stranger}, 'ADMINISTRATOR', 'READ_ONLY') RETURNING role", [
        ("alice", .rows(["ADMINISTRATOR"])), ("admin", .denied), ("writer", .denied),
    ])
    + cases("participants: change a private user's permission",
            count("UPDATE canopy.participants SET permission = 'READ_WRITE' WHERE user_id = {reader}"), [
        ("alice", .rows(["2"])), ("admin", .rows(["2"])), ("writer", .rows(["0"])), ("public", .rows(["0"])), ("stranger", .rows(["0"])),
        ("reader", .denied),
    ])
    + cases("participants: promote a private user to administrator",
            count("UPDATE canopy.participants SET role = 'ADMINISTRATOR' WHERE user_id = {reader}"), [
        ("alice", .rows(["2"])), ("admin", .denied),
    ])
    + cases("participants: change the owner's row", count("UPDATE canopy.participants SET permission = 'READ_ONLY' WHERE role = 'OWNER'"), [
        ("alice", .rows(["0"])), ("admin", .rows(["0"])), ("reader", .rows(["0"])),
    ])
    + cases("participants: leave (own row to REMOVED)",
            count("UPDATE canopy.participants SET status = 'REMOVED' WHERE user_id = {me}"), [
        ("reader", .rows(["2"])), ("writer", .rows(["2"])), ("public", .rows(["2"])), ("admin", .rows(["2"])),
        ("pending", .rows(["0"])), ("removed", .rows(["0"])), ("stranger", .rows(["0"])),
    ])
    + cases("participants: remove a private user", count("DELETE FROM canopy.participants WHERE user_id = {reader}"), [
        ("alice", .rows(["2"])), ("admin", .rows(["2"])), ("writer", .rows(["0"])), ("reader", .rows(["0"])), ("stranger", .rows(["0"])),
    ])
    + cases("participants: remove an administrator", count("DELETE FROM canopy.participants WHERE user_id = {admin}"), [
        ("alice", .rows(["2"])), ("admin", .rows(["0"])), ("writer", .rows(["0"])),
    ])
    + cases("participants: a public user leaves", count("DELETE FROM canopy.participants WHERE user_id = {me}"), [
        ("public", .rows(["2"])), ("reader", .rows(["0"])), ("writer", .rows(["0"])),
    ])
    // users
    + cases("users: select", "SELECT name FROM canopy.users ORDER BY 1", [
        ("alice", .rows(["admin", "alice", "pending", "public", "reader", "removed", "writer"])),
        ("admin", .rows(["admin", "alice", "pending", "public", "reader", "removed", "writer"])),
        ("reader", .rows(["alice", "reader"])), ("public", .rows(["alice", "public"])),
        ("pending", .rows(["pending"])), ("removed", .rows(["removed"])), ("stranger", .rows(["stranger"])), ("bob", .rows(["bob"])),
    ])
    + cases("users: create", "INSERT INTO canopy.users (name) VALUES ('mallory') RETURNING name", [("alice", .denied), ("stranger", .denied)])
    + cases("users: update", count("UPDATE canopy.users SET email = 'x@example.com'"), [("alice", .denied), ("stranger", .denied)])
    + cases("users: delete", count("DELETE FROM canopy.users"), [("alice", .denied), ("stranger", .denied)])
    // api_tokens
    + cases("api_tokens: select own", "SELECT count(id)::text FROM canopy.api_tokens", [
        ("alice", .rows(["1"])), ("stranger", .rows(["1"])), ("admin", .rows(["1"])),
    ])
    + cases("api_tokens: read hashes", "SELECT encode(secret_hash, 'hex') FROM canopy.api_tokens", [("alice", .denied), ("stranger", .denied)])
    + cases("api_tokens: issue", "INSERT INTO canopy.api_tokens (user_id, selector, secret_hash) VALUES ({me}, '0123456789abcdef', '\\x00') RETURNING id::text", [
        ("alice", .denied), ("stranger", .denied),
    ])
    // memberships: your own rows, written only by triggers (migrations/0014)
    + cases("memberships: select one's own", "SELECT count(*)::text FROM canopy.memberships WHERE user_id = {me}", [
        ("alice", .rows(["5"])), ("reader", .rows(["3"])), ("public", .rows(["3"])), ("pending", .rows(["1"])),
        ("removed", .rows(["1"])), ("stranger", .rows(["1"])),
    ])
    + cases("memberships: select someone else's", "SELECT count(*)::text FROM canopy.memberships WHERE user_id <> {me}", [
        ("alice", .rows(["0"])), ("admin", .rows(["0"])), ("reader", .rows(["0"])), ("stranger", .rows(["0"])),
    ])
    + cases("memberships: grant oneself a zone",
            "INSERT INTO canopy.memberships (user_id, zone_id, owner_id, role, can_write) VALUES ({me}, {zone:Family}, {alice}, 'OWNER', true) RETURNING id::text", [
        ("stranger", .denied), ("reader", .denied),
    ])
    + cases("memberships: upgrade to writing", count("UPDATE canopy.memberships SET can_write = true"), [("reader", .denied), ("public", .denied)])
    + cases("memberships: delete", count("DELETE FROM canopy.memberships"), [("alice", .denied), ("reader", .denied)])
    + cases("memberships: rebuild", "SELECT canopy.rebuild_memberships()::text", [("alice", .denied), ("stranger", .denied)])
    // uploads: your own (docs/API.md §11); recorded as yourself, the token's hash never readable
    + cases("uploads: select", "SELECT left(sha256, 3) || (used_at IS NOT NULL)::text FROM canopy.uploads ORDER BY id", [
        ("alice", .rows(["aaafalse", "ccctrue"])), ("bob", none), ("stranger", none),
    ])
    + cases("record_assets: select (the assets of the records one may read)", "SELECT record_name || ':' || field_name || ':' || left(sha256, 3) FROM canopy.record_assets", [
        ("alice", .rows(["log1:img:ccc"])), ("reader", .rows(["log1:img:ccc"])), ("public", .rows(["log1:img:ccc"])),
        ("bob", none), ("pending", none), ("removed", none), ("stranger", none),
    ])
    + cases("uploads: read a token's hash", "SELECT encode(token_hash, 'hex') FROM canopy.uploads", [("alice", .denied)])
    + cases("uploads: record one's own", "INSERT INTO canopy.uploads (token_hash, sha256, size, content_type) VALUES (sha256('t9'), repeat('b', 64), 1, 'text/plain') RETURNING size::text", [
        ("stranger", .rows(["1"])),
    ])
    + cases("uploads: record one as someone else", "INSERT INTO canopy.uploads (user_id, token_hash, sha256, size, content_type) VALUES ({alice}, sha256('t3'), repeat('b', 64), 1, 'text/plain') RETURNING size::text", [
        ("stranger", .denied), ("bob", .denied),
    ])
    + cases("uploads: mark one used", count("UPDATE canopy.uploads SET used_at = now()"), [("alice", .denied)])
    + cases("uploads: delete", count("DELETE FROM canopy.uploads"), [("alice", .denied)])
    // identities: your own sign-ins; written only by canopy.sign_in
    + cases("identities: select", "SELECT subject FROM canopy.identities", [("alice", .rows(["alice-at-idp"])), ("stranger", none), ("admin", none)])
    + cases("identities: claim someone's", "INSERT INTO canopy.identities (user_id, issuer, subject, provider) VALUES ({me}, 'https://idp.example', 'x', 'idp') RETURNING id::text", [
        ("alice", .denied), ("stranger", .denied),
    ])
    + cases("identities: move one", count("UPDATE canopy.identities SET user_id = {me}"), [("stranger", .denied), ("alice", .denied)])
    + cases("identities: delete", count("DELETE FROM canopy.identities"), [("alice", .denied)])
    + cases("api_tokens: issue one's own through canopy.issue_token", "SELECT canopy.issue_token('00112233445566aa', decode(repeat('00', 32), 'hex'))", [
        ("stranger", .rows(["cnp_00112233445566aa"])),
    ])
    + cases("api_tokens: revoke one's own through canopy.revoke_own_token (nobody else's)", "SELECT canopy.revoke_own_token('cnp_' || (SELECT selector FROM canopy.api_tokens LIMIT 1))::text", [
        ("alice", .rows(["1"])), ("stranger", .rows(["1"])),
    ])
    + cases("api_tokens: un-revoke", count("UPDATE canopy.api_tokens SET revoked_at = NULL"), [("alice", .denied)])
    + cases("users: sign in as a new person makes a new user, never alice", "SELECT (canopy.sign_in('https://idp.example', 'new-person', 'idp', NULL, 'alice@example.com', NULL) <> {alice})::text", [
        ("stranger", .rows(["true"])),
    ])
    + cases("users: sign in as alice's identity is alice (the gateway verified the token)", "SELECT (canopy.sign_in('https://idp.example', 'alice-at-idp', 'idp', NULL, NULL, NULL) = {alice})::text", [
        ("stranger", .rows(["true"])),
    ])
    // tombstones
    + cases("tombstones: select", "SELECT record_name FROM canopy.tombstones ORDER BY 1", [
        ("alice", .rows(["gone", "gone2"])), ("reader", .rows(["gone"])), ("writer", .rows(["gone"])), ("public", .rows(["gone"])),
        ("pending", none), ("removed", none), ("stranger", none), ("bob", none),
    ])
    + cases("tombstones: forge", "INSERT INTO canopy.tombstones (zone_id, record_name, record_type, change_seq) VALUES ({zone:Family}, 'x', 'Item', 1) RETURNING id::text", [
        ("alice", .denied), ("writer", .denied),
    ])
    // zone_departures and feed_state: each user reads their own departures; nobody writes
    // (accepting a share is recorded there too: it changes what the user sees)
    + cases("zone_departures: select", "SELECT zone_name FROM canopy.zone_departures ORDER BY 1", [
        ("removed", .rows(["Family", "Family", "Log", "Log"])), ("bob", .rows(["Gone"])),
        ("reader", .rows(["Family", "Log"])), ("writer", .rows(["Family", "Log"])), ("admin", .rows(["Family", "Log"])),
        ("public", .rows(["Family", "Log"])), ("alice", none), ("pending", none), ("stranger", none),
    ])
    + cases("zone_departures: forge",
            "INSERT INTO canopy.zone_departures (user_id, scope, zone_id, zone_name, owner_id, owner_record_name, change_seq) VALUES ({me}, 'SHARED', 1, 'x', 1, 'x', 1) RETURNING id::text", [
        ("alice", .denied), ("stranger", .denied),
    ])
    + cases("zone_departures: erase", count("DELETE FROM canopy.zone_departures"), [("removed", .denied), ("bob", .denied)])
    // owner_clocks (migrations/0047): a user reads their own clock and those of the owners who share with them; only the clocks' triggers write
    + cases("owner_clocks: select", "SELECT CASE owner_id WHEN {me} THEN 'own' WHEN {alice} THEN 'alice' ELSE 'other' END FROM canopy.owner_clocks ORDER BY 1", [
        ("alice", .rows(["own"])), ("bob", .rows(["own"])), ("reader", .rows(["alice", "own"])), ("writer", .rows(["alice", "own"])),
        ("admin", .rows(["alice", "own"])), ("public", .rows(["alice", "own"])), ("pending", .rows(["own"])), ("removed", .rows(["own"])),
        ("stranger", .rows(["own"])),
    ])
    + cases("owner_clocks: wind back", count("UPDATE canopy.owner_clocks SET position = 0"), [("alice", .denied), ("writer", .denied)])
    + cases("owner_clocks: forge", count("INSERT INTO canopy.owner_clocks (owner_id, position) VALUES ({me}, 1000)"), [("stranger", .denied)])
    + cases("owner_clocks: tick by hand", "SELECT canopy.tick_owner_clock({me})::text", [("alice", .denied)])
    + cases("feed_state: select", "SELECT coalesce(departures_purged_before::text, 'never') FROM canopy.feed_state", [("stranger", .rows(["never"])), ("alice", .rows(["never"]))])
    + cases("feed_state: reset", count("UPDATE canopy.feed_state SET departures_purged_before = NULL"), [("alice", .denied)])
    + cases("zones: touch a zone directly", "SELECT canopy.touch_zone({zone:Family}, {alice})::text", [("alice", .denied), ("stranger", .denied)])
    // field_types: the schema is readable by all, written only by the save trigger
    + cases("field_types: select", "SELECT field_name FROM canopy.field_types WHERE record_type = 'Item' ORDER BY 1", [
        ("alice", .rows(["n"])), ("stranger", .rows(["n"])), ("bob", .rows(["n"])),
    ])
    + cases("field_types: declare", "INSERT INTO canopy.field_types (record_type, field_name, field_type) VALUES ('Item', 'x', 'STRING') RETURNING field_name", [
        ("alice", .denied), ("stranger", .denied),
    ])
    + cases("field_types: retype", count("UPDATE canopy.field_types SET field_type = 'STRING'"), [("alice", .denied)])
    + cases("field_types: declare an index", count("UPDATE canopy.field_types SET queryable = true"), [("alice", .denied), ("stranger", .denied)])
    // the schema's grants and index registry: only `canopy schema apply` (an administrator) reads or writes them
    + cases("record_type_grants: select", "SELECT role_name FROM canopy.record_type_grants", [("alice", .denied), ("stranger", .denied)])
    + cases("record_type_grants: insert", count("INSERT INTO canopy.record_type_grants VALUES ('Item', 'READ', '_world', 0)"), [("alice", .denied)])
    + cases("schema_indexes: select", "SELECT index_name FROM canopy.schema_indexes", [("alice", .denied), ("stranger", .denied)])
    + cases("schema_indexes: register", count("INSERT INTO canopy.schema_indexes VALUES ('records_schema_0000000000000000', 'Item', 'n', 'btree', 'x')"), [("alice", .denied)])
    // schema_migrations and schema_repeatables: only `canopy migrate` (an administrator)
    + cases("schema_migrations: select", "SELECT name FROM canopy.schema_migrations", [("alice", .denied), ("stranger", .denied)])
    // share_tokens (migrations/0041): shares by URL token, found only through
    // the owner's functions (share_view, accept_share); a user reads, writes
    // and removes the rows of their own shares only (on Citus keep_share_token
    // and forget_share_token run as the owner, DECISIONS 174).
    + cases("share_tokens: select others'", "SELECT count(*)::text FROM canopy.share_tokens WHERE owner_id <> {me}", [
        ("alice", .rows(["0"])), ("reader", .rows(["0"])), ("stranger", .rows(["0"])),
    ])
    + cases("share_tokens: select own", "SELECT (count(*) = (SELECT count(*) FROM canopy.shares WHERE owner_id = {me}))::text FROM canopy.share_tokens", [
        ("alice", .rows(["true"])),
    ])
    + cases("share_tokens: insert for another owner", "INSERT INTO canopy.share_tokens VALUES (repeat('a', 40), {alice}, 1) RETURNING 1", [
        ("stranger", .denied), ("admin", .denied),
    ])
    + cases("share_tokens: insert for oneself", "INSERT INTO canopy.share_tokens VALUES (repeat('a', 40), {me}, 999999) RETURNING 1::text", [("alice", .rows(["1"]))])
    + cases("share_tokens: remove another's", count("DELETE FROM canopy.share_tokens WHERE owner_id <> {me}"), [("stranger", .rows(["0"])), ("admin", .rows(["0"]))])
    // push_watchers (migrations/0043): counted by the subscriptions' trigger,
    // read only by push_covered; a caller neither reads nor forges them.
    + cases("push_watchers: select", "SELECT user_id FROM canopy.push_watchers", [("alice", .denied), ("stranger", .denied)])
    + cases("push_watchers: insert", "INSERT INTO canopy.push_watchers VALUES ({me}, 1, 1) RETURNING 1", [("alice", .denied), ("stranger", .denied)])
    + cases("schema_repeatables: select", "SELECT path FROM canopy.schema_repeatables", [("alice", .denied), ("stranger", .denied)])
    + cases("schema_repeatables: rewrite a checksum", count("UPDATE canopy.schema_repeatables SET checksum = 'x'"), [("alice", .denied)])
    // push (migrations/0020): your own subscriptions and devices; the outbox
    // and other users' rows only through the deliverer's functions
    + cases("push_subscriptions: select", "SELECT subscription_id FROM canopy.push_subscriptions ORDER BY 1", [
        ("alice", .rows(["alice-all"])), ("bob", .rows(["bob-all"])), ("stranger", none), ("reader", none),
    ])
    + cases("push_subscriptions: save one for another user",
            "INSERT INTO canopy.push_subscriptions (user_id, subscription_id, kind, scope) VALUES ({alice}, 'x', 'DATABASE', 'PRIVATE') RETURNING subscription_id", [
        ("bob", .denied), ("stranger", .denied), ("alice", .rows(["x"])),
    ])
    + cases("push_subscriptions: watch a zone one cannot reach",
            "INSERT INTO canopy.push_subscriptions (user_id, subscription_id, kind, scope, zone_id) VALUES ({me}, 'x', 'ZONE', 'SHARED', {zone:Family}) RETURNING subscription_id", [
        ("reader", .rows(["x"])), ("stranger", .denied), ("bob", .denied), ("pending", .denied), ("removed", .denied),
    ])
    + cases("push_subscriptions: delete everyone's", count("DELETE FROM canopy.push_subscriptions"), [("bob", .rows(["1"])), ("stranger", .rows(["0"]))])
    + cases("push_devices: select", "SELECT webhook_url FROM canopy.push_devices ORDER BY 1", [
        ("alice", .rows(["https://alice.example/hook"])), ("bob", .rows(["https://bob.example/hook"])), ("stranger", none),
    ])
    + cases("push_devices: read a webhook's secret", "SELECT encode(webhook_secret, 'hex') FROM canopy.push_devices", [("alice", .denied), ("bob", .denied)])
    + cases("push_devices: insert directly",
            "INSERT INTO canopy.push_devices (user_id, kind, webhook_url, webhook_secret) VALUES ({me}, 'WEBHOOK', 'https://x.example', sha256('x')) RETURNING kind", [
        ("alice", .denied), ("stranger", .denied),
    ])
    + cases("push_devices: point someone's device elsewhere", count("UPDATE canopy.push_devices SET webhook_url = 'https://evil.example'"), [("alice", .denied), ("bob", .denied)])
    + cases("push_devices: remove everyone's", count("DELETE FROM canopy.push_devices"), [("alice", .rows(["1"])), ("stranger", .rows(["0"]))])
    + cases("push_outbox: read", "SELECT zone_id::text FROM canopy.push_outbox", [("alice", .denied), ("stranger", .denied)])
    + cases("push_outbox: forge", count("INSERT INTO canopy.push_outbox (zone_id, after_seq) VALUES (1, 0)"), [("alice", .denied)])
    + cases("push_deliveries: select", "SELECT array_to_string(subscription_ids, ',') FROM canopy.push_deliveries", [
        ("alice", .rows(["alice-all"])), ("bob", none), ("stranger", none),
    ])
    + cases("push_deliveries: queue one on another user's device",
            "INSERT INTO canopy.push_deliveries (device_id, user_id, subscription_ids) SELECT id, {me}, '{x}' FROM canopy.push_devices WHERE user_id = {bob} RETURNING 1", [
        ("alice", none),
    ])
    + cases("push_deliveries: queue one for another user", "INSERT INTO canopy.push_deliveries (device_id, user_id, subscription_ids) VALUES (gen_random_uuid(), {bob}, '{x}') RETURNING 1", [
        ("alice", .denied),
    ])


extension PermissionCase {
    /// Runs the case as `canopy_gateway` for its identity, in a transaction
    /// rolled back; nil when the outcome is the expected one, else what
    /// happened. The one check of PermissionMatrixTests (one PostgreSQL)
    /// and CitusPermissionMatrixTests (Citus's policies, DECISIONS 158).
    func mismatch(in fixture: PermissionFixture) async -> String? {
        var sql = self.sql.replacingOccurrences(of: "{me}", with: String(fixture.ids[who]!))
        for (key, id) in fixture.ids {
            sql = sql.replacingOccurrences(of: "{\(key)}", with: String(id))
        }
        var expected = outcome
        if case .rows(let rows) = expected {
            expected = .rows(rows.map { row in fixture.ids.reduce(row) { $0.replacingOccurrences(of: "{\($1.key)}", with: String($1.value)) } })
        }
        let userID = fixture.ids[who]!
        let statement = sql
        let result: Result<[String], any Error>
        do {
            let distributed = fixture.distributed
            result = .success(try await TestDatabase.withConnection(fixture.gateway) { connection in
                try await connection.asUser(userID, actAs: distributed) { connection in
                    try await connection.texts(PostgresQuery(unsafeSQL: statement)).map { $0 ?? "NULL" }
                }
            })
        } catch {
            result = .failure(error)
        }
        switch (expected, result) {
        case (.rows(let rows), .success(let actual)):
            return actual == rows ? nil : "\(self): returned \(actual)"
        case (.denied, .failure(let error)):
            let state = PostgresErrors.sqlState(of: error)
            return state == "42501" || state == "CN005" ? nil : "\(self): refused with \(state ?? "?"): \(PostgresErrors.message(of: error))"
        case (.denied, .success(let actual)):
            return "\(self): was allowed and returned \(actual)"
        case (_, .failure(let error)):
            // Where it failed (the function and statement), when the server says.
            let location = (error as? PSQLError)?.serverInfo?[.locationContext].map { " [at \($0.prefix(400))]" } ?? ""
            return "\(self): failed: \(PostgresErrors.message(of: error))\(location)"
        case (.affected, _):
            return "use .rows with count() for writes"
        }
    }
}
