/// JSON for `Share`, `Participant` and `User`. Row-level security decides
/// what each caller sees: a share only for its owner and accepted
/// participants, the whole participant list only for the owner and
/// administrators (others see the owner and themselves).
extension Projection {
    /// A `Share` (or null) from the share row that `condition` picks; the
    /// condition gets the alias of `canopy.shares`.
    static func share(
        _ fields: [SelectedField], request: ParsedRequest, _ builder: inout SQLBuilder, where condition: (SQL) -> SQL
    ) throws -> SQL {
        let s = builder.alias("s"), zone = builder.alias("sz"), owner = builder.alias("so"), root = builder.alias("sr")
        let json = try object(fields, &builder) { field, builder in
            switch field.name {
            case "url": return "\(builder.bind(request.shareURLPrefix))::text || \(s).url_token"
            case "title": return "\(s).title"
            case "publicPermission": return "\(s).public_permission"
            case "rootRecordName": return "\(root).record_name"
            case "zone":
                return try Projection.zone(field.children, id: "\(zone).id", name: "\(zone).name", ownerName: "\(owner).record_name", request: request, &builder)
            case "owner":
                return try participants(field.children, of: "\(s).id", ownerOnly: true, &builder)
            case "participants":
                return try participants(field.children, of: "\(s).id", ownerOnly: false, &builder)
            case "__typename": return "'Share'"
            default: throw QueryError(.badRequest, "Share has no field \(field.name)")
            }
        }
        return """
            (SELECT \(json) FROM canopy.shares \(s) JOIN canopy.zones \(zone) ON \(zone).id = \(s).zone_id \
            JOIN canopy.users \(owner) ON \(owner).id = \(zone).owner_id \
            LEFT JOIN canopy.records \(root) ON \(root).id = \(s).root_record_id WHERE \(condition(s)))
            """
    }

    /// The owner's `Participant`, or the list of participants who are not
    /// REMOVED (owner first, then in the order they were added).
    static func participants(_ fields: [SelectedField], of share: SQL, ownerOnly: Bool, _ builder: inout SQLBuilder) throws -> SQL {
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
            case "__typename": return "'Participant'"
            default: throw QueryError(.badRequest, "Participant has no field \(field.name)")
            }
        }
        let from: SQL = "FROM canopy.participants \(p) LEFT JOIN canopy.users \(user) ON \(user).id = \(p).user_id WHERE \(p).share_id = \(share)"
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
            case "__typename": return "'User'"
            default: throw QueryError(.badRequest, "User has no field \(field.name)")
            }
        }
    }
}
