/// JSON for `Share`, `Participant` and `User`. Row-level security decides
/// what each caller sees: a share only for its owner and accepted
/// participants, the whole participant list only for the owner and
/// administrators (others see the owner and themselves).
extension Projection {
    /// A `Share` (or null) from the share row that `condition` picks; the
    /// condition gets the alias of `canopy.shares`.
    static func share(
        _ fields: [SelectedField], request: ParsedRequest, owner ownerValue: SQL? = nil, _ builder: inout SQLBuilder, where condition: (SQL) -> SQL
    ) throws -> SQL {
        let s = builder.alias("s"), zone = builder.alias("sz"), owner = builder.alias("so"), root = builder.alias("sr")
        let ownerID = ownerValue ?? "\(s).owner_id"
        let json = try object(fields, &builder) { field, builder in
            switch field.name {
            case "url": return "\(builder.bind(request.shareURLPrefix))::text || \(s).url_token"
            case "title": return "\(s).title"
            case "publicPermission": return "\(s).public_permission"
            case "rootRecordName": return "\(root).record_name"
            case "zone":
                return try Projection.zone(field.children, id: "\(zone).id", owner: "\(zone).owner_id", name: "\(zone).name", ownerName: "\(owner).record_name", request: request, &builder)
            case "owner":
                return try participants(field.children, of: "\(s).id", owner: ownerID, ownerOnly: true, &builder)
            case "participants":
                return try participants(field.children, of: "\(s).id", owner: ownerID, ownerOnly: false, &builder)
            case "allowsAccessRequests": return "\(s).allows_access_requests"
            case "type": return "\(s).share_type"
            case "thumbnailImageData": return base64("\(s).thumbnail")
            case "accessRequests": return try accessRequests(field.children, of: "\(s).id", owner: ownerID, &builder)
            case "activity": return try activity(field, of: "\(s).id", owner: ownerID, request: request, &builder)
            case "__typename": return "'Share'"
            default: throw QueryError(.badRequest, "Share has no field \(field.name)")
            }
        }
        return """
            (SELECT \(json) FROM canopy.shares \(s) JOIN canopy.zones \(zone) ON \(zone).owner_id = \(s).owner_id AND \(zone).id = \(s).zone_id \
            JOIN canopy.users \(owner) ON \(owner).id = \(zone).owner_id \
            LEFT JOIN canopy.records \(root) ON \(root).owner_id = \(s).owner_id AND \(root).id = \(s).root_record_id WHERE \(condition(s)))
            """
    }

    /// The owner's `Participant`, or the list of participants who are not
    /// REMOVED (owner first, then in the order they were added).
    static func participants(_ fields: [SelectedField], of share: SQL, owner: SQL, ownerOnly: Bool, _ builder: inout SQLBuilder) throws -> SQL {
        let p = builder.alias("p"), user = builder.alias("pu")
        let json = try object(fields, &builder) { field, builder in
            switch field.name {
            case "user":
                let projected = try Projection.user(field.children, alias: user, &builder)
                return "CASE WHEN \(user).id IS NULL THEN NULL ELSE \(projected) END"
            case "email": return "\(p).email"
            case "phone": return "\(p).phone"
            case "role": return "\(p).role"
            case "permission": return "\(p).permission"
            case "status": return "\(p).status"
            case "isApprovedRequester": return "\(p).is_approved_requester"
            case "dateAddedToShare": return epochMilliseconds("\(p).invited_at")
            case "__typename": return "'Participant'"
            default: throw QueryError(.badRequest, "Participant has no field \(field.name)")
            }
        }
        let from: SQL = "FROM canopy.participants \(p) LEFT JOIN canopy.users \(user) ON \(user).id = \(p).user_id WHERE \(p).owner_id = \(owner) AND \(p).share_id = \(share)"
        if ownerOnly {
            return "(SELECT \(json) \(from) AND \(p).role = 'OWNER')"
        }
        return "(SELECT coalesce(json_agg(\(json) ORDER BY \(p).role <> 'OWNER', \(p).id), '[]') \(from) AND \(p).status <> 'REMOVED')"
    }

    /// A `User` from a `canopy.users` row (or a row with the same columns).
    static func user(_ fields: [SelectedField], alias: SQL, _ builder: inout SQLBuilder) throws -> SQL {
        try object(fields, &builder) { field, _ in
            switch field.name {
            case "userRecordName": return "\(alias).record_name"
            case "name": return "coalesce(\(alias).display_name, \(alias).name)"
            case "email": return "\(alias).email"
            case "phone": return "\(alias).phone"
            // Only `me` answers someone's storage (MePlan).
            case "usage": return "NULL"
            case "__typename": return "'User'"
            default: throw QueryError(.badRequest, "User has no field \(field.name)")
            }
        }
    }

    /// A `bytea` as base64 without line breaks (PostgreSQL's encoder adds them).
    static func base64(_ bytes: SQL) -> SQL {
        "translate(encode(\(bytes), 'base64'), E'\\n', '')"
    }

    /// A `timestamptz` as milliseconds since the epoch (a `Float`).
    static func epochMilliseconds(_ time: SQL) -> SQL {
        "(extract(epoch FROM \(time)) * 1000)::float8"
    }

    /// `Share.accessRequests`: pending and blocked requesters, through
    /// `canopy.share_requesters`, which answers only the share's managers,
    /// given the share's owner (one shard on Citus).
    static func accessRequests(_ fields: [SelectedField], of share: SQL, owner: SQL, _ builder: inout SQLBuilder) throws -> SQL {
        let q = builder.alias("q")
        let json = try object(fields, &builder) { field, builder in
            switch field.name {
            case "user": return try Projection.user(field.children, alias: q, &builder)
            case "status": return "\(q).status"
            case "requestedAt": return epochMilliseconds("\(q).requested_at")
            case "__typename": return "'AccessRequest'"
            default: throw QueryError(.badRequest, "AccessRequest has no field \(field.name)")
            }
        }
        return "(SELECT coalesce(json_agg(\(json) ORDER BY \(q).requested_at), '[]') FROM canopy.share_requesters(\(share), \(owner)) \(q))"
    }

    /// Most entries a page of `Share.activity` holds.
    static let maximumActivityPage = 500

    /// `Share.activity(after, limit)`: a page of the share's log, oldest
    /// first, as row-level security lets the caller read it (managers: all;
    /// other participants: the entries about themselves). The cursor is the
    /// last entry's id.
    static func activity(_ field: SelectedField, of share: SQL, owner: SQL, request: ParsedRequest, _ builder: inout SQLBuilder) throws -> SQL {
        let arguments = request.arguments(of: field)
        let limit = try arguments.limit(default: 50, maximum: maximumActivityPage)
        var after: Int64 = 0
        if let text = try arguments.string("after") {
            guard let id = Int64(text), id >= 0 else {
                throw arguments.invalid("after", "after is the cursor of an earlier page of this log")
            }
            after = id
        }
        let a = builder.alias("a"), x = builder.alias("x")
        let boundAfter = builder.bind(after), boundLimit = builder.bind(limit)
        let page = try object(field.children, &builder) { child, builder in
            switch child.name {
            case "entries":
                let entry = try object(child.children, &builder) { item, _ in
                    switch item.name {
                    case "event": return "\(a).event"
                    case "actor": return "\(a).actor_name"
                    case "subject": return "\(a).subject"
                    case "detail": return "\(a).detail"
                    case "at": return epochMilliseconds("\(a).at")
                    case "__typename": return "'ShareActivity'"
                    default: throw QueryError(.badRequest, "ShareActivity has no field \(item.name)")
                    }
                }
                return "coalesce(json_agg(\(entry) ORDER BY \(a).id) FILTER (WHERE \(a).n <= \(boundLimit)::bigint), '[]')"
            case "cursor":
                return "CASE WHEN count(*) > \(boundLimit)::bigint THEN (max(\(a).id) FILTER (WHERE \(a).n <= \(boundLimit)::bigint))::text END"
            case "__typename": return "'ShareActivityPage'"
            default: throw QueryError(.badRequest, "ShareActivityPage has no field \(child.name)")
            }
        }
        return """
            (SELECT \(page) FROM (SELECT \(x).*, row_number() OVER (ORDER BY \(x).id) AS n FROM canopy.share_activity \(x) \
            WHERE \(x).owner_id = \(owner) AND \(x).share_id = \(share) AND \(x).id > \(boundAfter)::bigint ORDER BY \(x).id LIMIT \(boundLimit)::bigint + 1) \(a) GROUP BY ())
            """
    }
}
