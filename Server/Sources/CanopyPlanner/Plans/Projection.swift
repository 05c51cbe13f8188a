/// JSON for the selected fields of Canopy's object types, as SQL
/// expressions: `json_build_object` over exactly the fields asked for, each
/// response key bound as a parameter. Nothing unasked is computed.
public enum Projection {
    /// A `Zone` from expressions for its id, owner's id, name and owner's
    /// record name (its share is found by the owner and zone: one shard on
    /// Citus).
    static func zone(
        _ fields: [SelectedField], id: SQL, owner: SQL, name: SQL, ownerName: SQL, request: ParsedRequest, _ builder: inout SQLBuilder
    ) throws -> SQL {
        try object(fields, &builder) { field, builder in
            switch field.name {
            case "zoneName": return name
            case "ownerName": return ownerName
            case "__typename": return "'Zone'"
            case "share":
                return try share(field.children, request: request, &builder) { s in
                    "\(s).owner_id = \(owner) AND \(s).zone_id = \(id) AND \(s).root_record_id IS NULL"
                }
            default: throw QueryError(.badRequest, "Zone has no field \(field.name)")
            }
        }
    }

    /// A share's root record read through a function (`share_root_preview`)
    /// whose owner, zone and id the plan read before its statement: its
    /// `zone` and `share` are found by those values, not by subqueries
    /// correlated with the function's rows, which Citus does not plan
    /// (DECISIONS 175).
    struct KnownRoot {
        var ownerID: SQL
        var zoneID: SQL
        var zoneName: SQL
        var ownerName: SQL
        var recordID: SQL
    }

    /// A `Record` from `canopy.records` aliased `r`; its zone from the `zone`
    /// CTE, or from `root` when the plan knows it. `zone`, the zone every
    /// `r` is in, gives the records' owner as a value where the statement
    /// has one (``ZoneReference/ownerValue(_:)``): a record's share is found
    /// by it, not by `r`'s column, which Citus cannot route a correlated
    /// subquery by (DECISIONS 176).
    static func record(
        _ fields: [SelectedField], request: ParsedRequest, root: KnownRoot? = nil, zone: ZoneReference? = nil, _ builder: inout SQLBuilder
    ) throws -> SQL {
        try object(fields, &builder) { field, builder in
            switch field.name {
            case "recordName": return "r.record_name"
            case "recordType": return "r.record_type"
            case "parent": return "r.parent_name"
            case "recordChangeTag": return "r.change_tag"
            case "__typename": return "'Record'"
            case "zone":
                if let root {
                    return try Projection.zone(field.children, id: root.zoneID, owner: root.ownerID, name: root.zoneName, ownerName: root.ownerName, request: request, &builder)
                }
                let zone = try Projection.zone(field.children, id: "zone.id", owner: "zone.owner_id", name: "zone.name", ownerName: "zone.owner_name", request: request, &builder)
                return "(SELECT \(zone) FROM zone)"
            case "fields":
                let arguments = request.arguments(of: field)
                // Assets marked for the URL signer (sql/functions/asset_marks.sql):
                // the only values of an answer that may get a downloadURL.
                guard let keys = try arguments.value("keys"), !keys.isNull else { return "canopy.marked_fields(r.fields)" }
                let names = try arguments.strings("keys")
                let bound = builder.bind(names)
                return "canopy.marked_fields((SELECT coalesce(jsonb_object_agg(f.key, f.value), '{}') FROM jsonb_each(r.fields) f WHERE f.key = ANY(\(bound)::text[])))"
            case "created":
                return try stamp(field.children, time: "r.created_at", user: "r.created_by_name", &builder)
            case "modified":
                return try stamp(field.children, time: "r.modified_at", user: "r.modified_by_name", &builder)
            case "share":
                if let root {
                    return try share(field.children, request: request, &builder) { s in "\(s).owner_id = \(root.ownerID) AND \(s).root_record_id = \(root.recordID)" }
                }
                // By the owner too: on Citus, the shard of the record's own.
                let owner = zone?.ownerValue(&builder)
                return try share(field.children, request: request, owner: owner, &builder) { s in
                    "\(s).owner_id = \(owner ?? "r.owner_id") AND \(s).root_record_id = r.id"
                }
            default:
                throw QueryError(.badRequest, "Record has no field \(field.name)")
            }
        }
    }

    static func stamp(_ fields: [SelectedField], time: SQL, user: SQL, _ builder: inout SQLBuilder) throws -> SQL {
        try object(fields, &builder) { field, _ in
            switch field.name {
            // Whole milliseconds (issue 49): one record has one stamp in every
            // answer; rows written before 0.49 keep microseconds, floored here.
            case "timestamp": return "floor(extract(epoch FROM \(time)) * 1000)::int8"
            case "userRecordName": return "coalesce(\(user), '')"
            case "__typename": return "'Stamp'"
            default: throw QueryError(.badRequest, "Stamp has no field \(field.name)")
            }
        }
    }

    /// `json_build_object(key1, expr1, ...)` for the fields, in order.
    static func object(
        _ fields: [SelectedField], _ builder: inout SQLBuilder,
        _ expression: (SelectedField, inout SQLBuilder) throws -> SQL
    ) throws -> SQL {
        var parts: [SQL] = []
        for field in fields {
            let key = builder.key(field.responseKey)
            parts.append("\(key), \(try expression(field, &builder))")
        }
        return "json_build_object(\(parts.joined(separator: ", ")))"
    }
}
