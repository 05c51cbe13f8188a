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

    /// Where a subscription dictionary finds the subscription's zone.
    enum SubscriptionZone {
        /// Read by `canopy.subscription_zone(s.zone_id)`, as the caller:
        /// Citus refuses a subquery of the zones correlated with the
        /// subscriptions, a table on its coordinator (DECISIONS 177).
        case lookedUp
        /// Joined by the statement as `pz`, a row of a zone reference's
        /// CTE (`name`, `owner_name`; NULLs when none): a saved
        /// subscription's zone, read before the write. On Citus the read
        /// after it was refused ("placements that were modified in this
        /// transaction by a different user": the save's trigger writes the
        /// watchers, a reference table, as its definer).
        case joined
        /// None: a subscription saved without a zone.
        case none
    }

    /// A subscription of `canopy.push_subscriptions` aliased `s` as the
    /// reference's subscription dictionary (jsonb): `subscriptionType`
    /// `zone` or `query`, `zoneID` when it watches one zone (the public
    /// zone's owner is `__defaultOwner__`), and for a query subscription
    /// `query` (its record type and Canopy's predicate, `filter`, which the
    /// subscription stores), `zoneWide`, `firesOn` and `firesOnce`;
    /// `notificationInfo` as it was saved.
    static func cloudKitSubscription(_ builder: inout SQLBuilder, zone: SubscriptionZone = .lookedUp) -> SQL {
        let zonePart: SQL
        switch zone {
        case .lookedUp:
            let publicOwner = builder.bind(DatabaseScope.publicOwnerName)
            let zoneID = cloudKitZoneID(name: "pz.name", owner: "coalesce(pz.owner_record_name, \(publicOwner)::text)")
            zonePart = "coalesce((SELECT jsonb_build_object('zoneID', \(zoneID)) FROM canopy.subscription_zone(s.zone_id) pz), '{}'::jsonb)"
        case .joined:
            zonePart = """
                CASE WHEN pz.name IS NULL THEN '{}'::jsonb \
                ELSE jsonb_build_object('zoneID', \(cloudKitZoneID(name: "pz.name", owner: "pz.owner_name"))) END
                """
        case .none:
            zonePart = "'{}'::jsonb"
        }
        return """
            (jsonb_build_object('subscriptionID', s.subscription_id, \
            'subscriptionType', CASE s.kind WHEN 'QUERY' THEN 'query' WHEN 'ZONE' THEN 'zone' ELSE 'database' END) \
            || \(zonePart) \
            || CASE WHEN s.kind = 'QUERY' THEN jsonb_build_object(\
            'query', jsonb_strip_nulls(jsonb_build_object('recordType', s.record_type, 'filter', s.filter)), \
            'zoneWide', s.zone_id IS NULL, \
            'firesOn', (SELECT coalesce(jsonb_agg(lower(e.event) ORDER BY e.n), '[]'::jsonb) FROM unnest(s.fires_on) WITH ORDINALITY e(event, n)), \
            'firesOnce', false) ELSE '{}'::jsonb END \
            || CASE WHEN jsonb_typeof(s.notification_info) = 'object' THEN jsonb_build_object('notificationInfo', s.notification_info) ELSE '{}'::jsonb END)
            """
    }
}
