/// Web Services' `records/query`, checked once per request and planned once
/// per shape (issue 69, P2): the same ``RecordsPlan`` as GraphQL's
/// `records`, its records written as CloudKit's dictionaries, its statement
/// kept by the plan cache as GraphQL's is.
extension RecordsPlan {
    /// What one `records/query` asks, read and checked against the record
    /// type's schema, with how its records are written.
    public struct CloudKitQuery: Sendable {
        let checked: Checked
        let style: CloudKitRecordStyle
        let schema: RecordSchema

        /// What of the request the statement's text depends on: the
        /// query's shape (its filter's placeholders, never their values),
        /// how records are written (`numbersAsStrings`, the zone ID per
        /// record or bound once, the request's `desiredKeys`, bound once so
        /// part of the key) and the zone's kind. With the record type's
        /// schema version, a plan cache's key; nil when records have
        /// `desiredKeys` of their own (a query never does today).
        public var shape: String? {
            style.shapeText.map { "ck-query|\(checked.shape)|\($0)" }
        }
    }

    /// Web Services' `records/query`, checked: every error its values can
    /// cause is thrown here, as without the cache.
    public static func check(
        _ query: RecordsQuery, style: CloudKitRecordStyle, schema: RecordSchema, secret: SigningKey
    ) throws -> CloudKitQuery {
        let checked = try check(query, schema: schema, secret: secret, locations: RecordsQuery.Locations())
        var values = checked.values
        values.cloudKitZoneID = style.zoneID.jsonText
        values.requestID = style.requestID
        return CloudKitQuery(
            checked: Checked(
                query: checked.query, predicate: checked.predicate, sortKeys: checked.sortKeys, after: checked.after,
                fingerprint: checked.fingerprint, locations: checked.locations, values: values
            ),
            style: style, schema: schema
        )
    }

    /// A checked `records/query`'s plan, its SQL written; `recording`, with
    /// the ``template`` the plan cache keeps.
    public init(_ query: CloudKitQuery, secret: SigningKey, recording: Bool = false) throws {
        try self.init(query.checked, rendering: .cloudKit(query.style), schema: query.schema, secret: secret, field: nil, recording: recording)
    }

    /// A checked `records/query`'s plan from a template made for its shape:
    /// only its values bound.
    public init(_ query: CloudKitQuery, secret: SigningKey, template: StatementTemplate) throws {
        try self.init(query.checked, field: nil, secret: secret, template: template)
    }
}
