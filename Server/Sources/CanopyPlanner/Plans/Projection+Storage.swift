/// `StorageUsage` (issue 53): the caller's row of `canopy.my_storage()`,
/// which reads only the current user's usage.
extension Projection {
    static func storageUsage(_ fields: [SelectedField], _ builder: inout SQLBuilder) throws -> SQL {
        let s = builder.alias("s")
        let json = try object(fields, &builder) { field, _ in
            switch field.name {
            case "usedBytes": return "(\(s).field_bytes + \(s).asset_bytes + \(s).pending_upload_bytes)::float8"
            case "storedBytes": return "(\(s).field_bytes + \(s).asset_bytes)::float8"
            case "fieldBytes": return "\(s).field_bytes::float8"
            case "assetBytes": return "\(s).asset_bytes::float8"
            case "pendingUploadBytes": return "\(s).pending_upload_bytes::float8"
            case "recordCount": return "\(s).record_count::float8"
            case "quotaBytes": return "\(s).quota_bytes::float8"
            case "__typename": return "'StorageUsage'"
            default: throw QueryError(.badRequest, "StorageUsage has no field \(field.name)")
            }
        }
        return "(SELECT \(json) FROM canopy.my_storage() \(s))"
    }
}
