/// CloudKit Web Services' zone ID and subscription dictionaries, written by
/// PostgreSQL in the plan's statement as its record dictionaries are
/// (``Projection/cloudKitRecord(_:_:)``), so the Web Services door hands
/// the text on instead of rewriting Canopy's JSON.
extension Projection {
    /// The reference's zone ID dictionary (jsonb) of a zone named `name`
    /// whose owner's record name is `owner` (SQL NULL: left out).
    static func cloudKitZoneID(name: SQL, owner: SQL) -> SQL {
        """
        jsonb_strip_nulls(jsonb_build_object('zoneName', \(name), \
        'zoneType', CASE WHEN \(name) = '_defaultZone' THEN 'DEFAULT_ZONE' ELSE 'REGULAR_CUSTOM_ZONE' END, \
        'ownerRecordName', \(owner)))
        """
    }

    /// A subscription of `canopy.push_subscriptions` aliased `s` as the
    /// reference's subscription dictionary (jsonb): `subscriptionType`
    /// `zone` or `query`, `zoneID` when it watches one zone (the public
    /// zone's owner is `__defaultOwner__`), and for a query subscription
    /// `query` (its record type and Canopy's predicate, `filter`, which the
    /// subscription stores), `zoneWide`, `firesOn` and `firesOnce`;
    /// `notificationInfo` as it was saved.
    static func cloudKitSubscription(_ builder: inout SQLBuilder) -> SQL {
        let publicOwner = builder.bind(DatabaseScope.publicOwnerName)
        let zoneID = cloudKitZoneID(name: "pz.name", owner: "coalesce(pu.record_name, \(publicOwner)::text)")
        return """
            (jsonb_build_object('subscriptionID', s.subscription_id, \
            'subscriptionType', CASE s.kind WHEN 'QUERY' THEN 'query' WHEN 'ZONE' THEN 'zone' ELSE 'database' END) \
            || coalesce((SELECT jsonb_build_object('zoneID', \(zoneID)) \
            FROM canopy.zones pz LEFT JOIN canopy.users pu ON pu.id = pz.owner_id AND pz.owner_id <> 0 \
            WHERE pz.id = s.zone_id AND (pu.id IS NOT NULL OR pz.owner_id = 0)), '{}'::jsonb) \
            || CASE WHEN s.kind = 'QUERY' THEN jsonb_build_object(\
            'query', jsonb_strip_nulls(jsonb_build_object('recordType', s.record_type, 'filter', s.filter)), \
            'zoneWide', s.zone_id IS NULL, \
            'firesOn', (SELECT coalesce(jsonb_agg(lower(e.event) ORDER BY e.n), '[]'::jsonb) FROM unnest(s.fires_on) WITH ORDINALITY e(event, n)), \
            'firesOnce', false) ELSE '{}'::jsonb END \
            || CASE WHEN jsonb_typeof(s.notification_info) = 'object' THEN jsonb_build_object('notificationInfo', s.notification_info) ELSE '{}'::jsonb END)
            """
    }
}
