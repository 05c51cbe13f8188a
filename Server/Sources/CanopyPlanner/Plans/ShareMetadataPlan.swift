import Foundation
import PostgresNIO

/// `shareMetadata(url)` and `acceptShare(url)`: what the share at a URL
/// shows the caller, read through `canopy.share_view` (no row: not a share
/// the caller may open, which looks the same as a URL that leads nowhere).
/// `accept` is the statement `acceptShare` runs first.
public struct ShareMetadataPlan: Sendable {
    public let token: String
    public let statement: SQLStatement
    let locations: [QueryError.Location]

    public init(_ field: SelectedField, request: ParsedRequest) throws {
        let arguments = request.arguments(of: field)
        let url = try arguments.requiredString("url")
        guard let token = Self.token(in: url) else {
            throw arguments.invalid("url", "'\(url)' is not a share URL (…/share/<token>)")
        }
        self.token = token
        locations = request.location(of: field.field)
        var builder = SQLBuilder()
        let bound = builder.bind(token)
        let json = try Projection.object(field.children, &builder) { child, builder in
            switch child.name {
            case "url": return "\(builder.bind(request.shareURLPrefix))::text || m.url_token"
            case "title": return "m.title"
            case "ownerName": return "m.owner_name"
            case "zone":
                return try Projection.zone(child.children, id: "m.zone_id", owner: "m.owner_id", name: "m.zone_name", ownerName: "m.owner_name", request: request, &builder)
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
                let record = try Projection.record(child.children, request: request, &builder)
                let boundKeys = builder.bind(keys)
                return "(SELECT \(record) FROM canopy.share_root_preview(m.url_token, \(boundKeys)::text[]) r)"
            case "__typename": return "'ShareMetadata'"
            default: throw QueryError(.badRequest, "ShareMetadata has no field \(child.name)")
            }
        }
        // `zone`: what Projection.record's `zone` reads, for rootRecord.
        builder.append("""
            WITH m AS (SELECT * FROM canopy.share_view(\(bound))), \
            zone AS (SELECT m.zone_id AS id, m.zone_name AS name, m.owner_name, m.owner_id FROM m) \
            SELECT \(json)::text FROM m
            """)
        statement = builder.query
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
        locations = []
        var builder = SQLBuilder()
        let bound = builder.bind(token)
        let json = Projection.cloudKitShareMetadata(style, shortGUID: token, rootRecord: rootRecord, &builder)
        builder.append("SELECT \(json)::text FROM canopy.share_view(\(bound)) m")
        statement = builder.query
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

extension ShareMetadataPlan: FieldPlan {
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
