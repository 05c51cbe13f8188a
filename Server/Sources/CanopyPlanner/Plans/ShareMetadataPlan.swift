import Foundation
import PostgresNIO

/// `shareMetadata(url)` and `acceptShare(url)`: what the share at a URL
/// shows the caller, read through `canopy.share_view` (no row: not a share
/// the caller may open, which looks the same as a URL that leads nowhere).
/// `accept` is the statement `acceptShare` runs first.
///
/// Two reads: ``locate`` finds the share (its id, owner, zone and root),
/// then ``statement(at:)`` renders the answer with those as bound values.
/// The answer's subqueries (the zone's share, the root record's) are then
/// found by values, not correlated with `share_view`'s rows: Citus plans
/// no subquery over distributed tables correlated with a function's rows
/// (DECISIONS 175); one PostgreSQL pays one round trip more, on a read
/// people make when they open a link.
public struct ShareMetadataPlan: Sendable {
    public let token: String
    /// `SELECT` of the share's ``Place``, as the caller may see it (no row:
    /// not a share the caller may open).
    public let locate: SQLStatement
    let render: @Sendable (Place) throws -> SQLStatement
    let locations: [QueryError.Location]

    /// Where a share is, read by ``locate``.
    public struct Place: Sendable, Equatable {
        public var shareID: Int64
        public var ownerID: Int64
        public var zoneID: Int64
        public var zoneName: String
        public var ownerName: String?
        /// The root record's id for a record hierarchy; nil for a zone.
        public var rootRecordID: Int64?

        /// The place rendered when a plan is made, so a bad selection is
        /// refused before anything is read.
        static let unread = Place(shareID: 0, ownerID: 0, zoneID: 0, zoneName: "", ownerName: nil, rootRecordID: nil)

        public static func decode(_ row: PostgresRow) throws -> Place {
            let (share, owner, zone, zoneName, ownerName, root) = try row.decode((Int64, Int64, Int64, String, String?, Int64?).self)
            return Place(shareID: share, ownerID: owner, zoneID: zone, zoneName: zoneName, ownerName: ownerName, rootRecordID: root)
        }

        /// The place's values bound into `builder`, for the projections.
        func bound(_ builder: inout SQLBuilder) -> (owner: SQL, zone: SQL, zoneName: SQL, ownerName: SQL, root: Projection.KnownRoot) {
            let owner: SQL = "\(builder.bind(ownerID))::int8", zone: SQL = "\(builder.bind(zoneID))::int8"
            let zoneName: SQL = "\(builder.bind(self.zoneName))::text", ownerName: SQL = "\(builder.bind(self.ownerName))::text"
            let root: SQL = "\(builder.bind(rootRecordID))::int8"
            return (owner, zone, zoneName, ownerName,
                    Projection.KnownRoot(ownerID: owner, zoneID: zone, zoneName: zoneName, ownerName: ownerName, recordID: root))
        }
    }

    public init(_ field: SelectedField, request: ParsedRequest) throws {
        let arguments = request.arguments(of: field)
        let url = try arguments.requiredString("url")
        guard let token = Self.token(in: url) else {
            throw arguments.invalid("url", "'\(url)' is not a share URL (…/share/<token>)")
        }
        self.token = token
        locate = Self.locate(token)
        locations = request.location(of: field.field)
        render = { place in
            var builder = SQLBuilder()
            let bound = builder.bind(token)
            let known = place.bound(&builder)
            let json = try Projection.object(field.children, &builder) { child, builder in
                switch child.name {
                case "url": return "\(builder.bind(request.shareURLPrefix))::text || m.url_token"
                case "title": return "m.title"
                case "ownerName": return "m.owner_name"
                case "zone":
                    return try Projection.zone(child.children, id: known.zone, owner: known.owner, name: known.zoneName, ownerName: known.ownerName, request: request, &builder)
                case "rootRecordName": return "m.root_record_name"
                case "role": return "m.role"
                case "permission": return "m.permission"
                case "status": return "m.status"
                case "ownerDisplayName": return "m.owner_display_name"
                case "allowsAccessRequests": return "m.allows_access_requests"
                case "accessRequestStatus": return "m.request_status"
                case "type": return "m.share_type"
                case "thumbnailImageData": return Projection.base64("m.thumbnail")
                case "rootRecord":
                    let childArguments = request.arguments(of: child)
                    let asked = try childArguments.value("desiredKeys")
                    let keys: [String]? = asked == nil || asked!.isNull ? nil : try childArguments.strings("desiredKeys")
                    let record = try Projection.record(child.children, request: request, root: known.root, &builder)
                    let boundKeys = builder.bind(keys)
                    return "(SELECT \(record) FROM canopy.share_root_preview(\(bound), \(boundKeys)::text[]) r)"
                case "__typename": return "'ShareMetadata'"
                default: throw QueryError(.badRequest, "ShareMetadata has no field \(child.name)")
                }
            }
            builder.append("SELECT \(json)::text FROM canopy.share_view(\(bound)) m WHERE m.share_id = \(builder.bind(place.shareID))")
            return builder.query
        }
        _ = try render(.unread)
    }

    /// `records/resolve` and `records/accept` of Web Services: the share
    /// at `url` (a share URL or its bare token, the reference's
    /// `shortGUID`) as the reference's Share Metadata Dictionary.
    /// `rootRecord`: the root record is fetched too, with those keys.
    public init(url: String, cloudKit style: CloudKitShareMetadataStyle, rootRecord: CloudKitShareMetadataStyle.RootRecord? = nil) throws(QueryError) {
        guard let token = Self.token(in: url) else {
            throw QueryError(.invalidArguments, "'\(url.prefix(200))' is not a share's shortGUID or URL (…/share/<token>)")
        }
        self.token = token
        locate = Self.locate(token)
        locations = []
        render = { place in
            var builder = SQLBuilder()
            let bound = builder.bind(token)
            let known = place.bound(&builder)
            let json = Projection.cloudKitShareMetadata(style, shortGUID: token, rootRecord: rootRecord, root: known.root, &builder)
            builder.append("SELECT \(json)::text FROM canopy.share_view(\(bound)) m WHERE m.share_id = \(builder.bind(place.shareID))")
            return builder.query
        }
    }

    /// The answer's statement for the share at `place` (what ``locate``
    /// read): no row when the share is gone, or no longer the caller's to
    /// open, since.
    public func statement(at place: Place) throws -> SQLStatement {
        try render(place)
    }

    static func locate(_ token: String) -> SQLStatement {
        var builder = SQLBuilder()
        builder.append("""
            SELECT m.share_id, m.owner_id, m.zone_id, m.zone_name, m.owner_name, m.root_record_id \
            FROM canopy.share_view(\(builder.bind(token))) m
            """)
        return builder.query
    }

    /// `SELECT canopy.accept_share(token)`.
    public var accept: SQLStatement {
        var builder = SQLBuilder()
        builder.append("SELECT canopy.accept_share(\(builder.bind(token)))")
        return builder.query
    }

    /// The token of a share URL (`<anything>/share/<token>`, or the bare
    /// token), if it has a token's shape.
    public static func token(in url: String) -> String? {
        let candidate = url.range(of: "/share/", options: .backwards).map { String(url[$0.upperBound...]) } ?? url
        let trimmed = candidate.split(whereSeparator: { $0 == "?" || $0 == "#" || $0 == "/" }).first.map(String.init) ?? ""
        let allowed = trimmed.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII && (CharacterSet.alphanumerics.contains(scalar) || scalar == "-" || scalar == "_")
        }
        return allowed && trimmed.count >= 32 && trimmed.count <= 128 ? trimmed : nil
    }
}

/// `discoverUser(email, phone)`: the user with that contact, or null.
public struct DiscoverUserPlan: Sendable {
    public let statement: SQLStatement

    public init(_ field: SelectedField, request: ParsedRequest) throws {
        let arguments = request.arguments(of: field)
        let email = try arguments.string("email")?.lowercased()
        let phone = try arguments.string("phone")
        guard email != nil || phone != nil else {
            throw arguments.invalid("email", "discoverUser needs an email or a phone")
        }
        var builder = SQLBuilder()
        let user = try Projection.user(field.children, alias: "d", &builder)
        let boundEmail = builder.bind(email), boundPhone = builder.bind(phone)
        builder.append("SELECT \(user)::text FROM canopy.discover_user(\(boundEmail)::text, \(boundPhone)::text) d")
        statement = builder.query
    }
}

extension DiscoverUserPlan {
    /// Web Services' `users/discover` and `users/lookup/email`: the
    /// discoverable person with this address or number, as
    /// (userRecordName, name, email, phone); no row: nobody.
    public static func statement(email: String?, phone: String?) throws(QueryError) -> SQLStatement {
        guard email != nil || phone != nil else { throw QueryError(.badRequest, "give an emailAddress or a phoneNumber") }
        var builder = SQLBuilder()
        let boundEmail = builder.bind(email?.lowercased()), boundPhone = builder.bind(phone)
        builder.append("""
            SELECT d.record_name, coalesce(d.display_name, d.name), d.email, d.phone \
            FROM canopy.discover_user(\(boundEmail)::text, \(boundPhone)::text) d WHERE d.record_name IS NOT NULL
            """)
        return builder.query
    }
}

extension DiscoverUserPlan {
    /// Web Services' `users/lookup/id`: the person with this user record
    /// name, among those the caller may see, as (userRecordName, display
    /// name); no row: nobody. No contact of theirs is read.
    public static func statement(userRecordName: String) -> SQLStatement {
        var builder = SQLBuilder()
        let bound = builder.bind(userRecordName)
        // The display name only: `name` is the account's handle, which may be an address.
        builder.append("SELECT d.record_name, d.display_name FROM canopy.discover_user_by_record_name(\(bound)::text) d")
        return builder.query
    }
}

/// `GET /share/<token>` in a browser before anyone signs in: the page
/// shows what a stranger may know only of a share whose public permission
/// is not NONE (`share_view` has no row for anything else).
public struct SharePagePlan: Sendable {
    public let statement: SQLStatement

    /// What the page says of a public share.
    public struct Summary: Sendable, Equatable {
        /// The share's title, else its zone's name.
        public var title: String
        /// The owner's name (nil: the owner has none).
        public var ownerName: String?
        /// True for a record hierarchy, false for a whole zone.
        public var isRecordHierarchy: Bool
        /// `READ_ONLY` or `READ_WRITE`: what accepting the link gives.
        public var permission: String
        /// The root record's `title` (else `name`) field, for a hierarchy.
        public var rootTitle: String?
        /// `cloudkit.share.thumbnailImageData`, base64.
        public var thumbnailBase64: String?
        /// `cloudkit.share.type`.
        public var type: String?
    }

    public init(token: String) {
        var builder = SQLBuilder()
        let bound = builder.bind(token)
        let text: (SQL) -> SQL = { value in "CASE jsonb_typeof(\(value)) WHEN 'string' THEN \(value) #>> '{}' WHEN 'object' THEN \(value) ->> 'value' END" }
        builder.append("""
            SELECT m.title, m.zone_name, m.owner_display_name, m.root_record_name IS NOT NULL, m.public_permission, \
            (SELECT coalesce(\(text("r.fields -> 'title'")), \(text("r.fields -> 'name'"))) \
               FROM canopy.share_root_preview(\(bound), ARRAY['title', 'name']) r), \
            \(Projection.base64("m.thumbnail")), m.share_type \
            FROM canopy.share_view(\(bound)) m
            """)
        statement = builder.query
    }

    public static func summary(_ row: PostgresRow) throws -> Summary {
        let (title, zoneName, owner, isRecord, permission, rootTitle, thumbnail, type) =
            try row.decode((String?, String, String?, Bool, String, String?, String?, String?).self)
        return Summary(title: title ?? zoneName, ownerName: owner, isRecordHierarchy: isRecord, permission: permission,
                       rootTitle: rootTitle, thumbnailBase64: thumbnail, type: type)
    }
}

extension ShareMetadataPlan {
    /// The answer's row.
    public static func decode(_ row: PostgresRow) throws -> JSONRow { try JSONRow.decode(row) }

    /// No row: not a share the caller may open.
    public func answer(_ row: JSONRow?) throws -> String? {
        guard let json = row?.json else { throw QueryError.shareNotOpen(at: locations) }
        return json
    }
}

extension DiscoverUserPlan: FieldPlan {
    public func answer(_ row: JSONRow?) throws -> String? { row?.json }
}

extension ShareMetadataPlan {
    /// `SELECT canopy.request_share_access(token)`: what
    /// `requestShareAccess` runs before reading the metadata back.
    public var requestAccess: SQLStatement {
        var builder = SQLBuilder()
        builder.append("SELECT canopy.request_share_access(\(builder.bind(token)))")
        return builder.query
    }
}
