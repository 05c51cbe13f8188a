/// How a sharing plan writes the share it answers: GraphQL's `Share` with
/// the fields of its selection, or CloudKit Web Services' share record
/// (`cloudkit.share`). Both are written by PostgreSQL in the plan's
/// statement, as records are (``RecordRendering``).
public enum ShareRendering: Sendable {
    case graphQL([SelectedField], ParsedRequest)
    /// The reference's share record in the zone whose ID dictionary is
    /// `zoneID`; its `url` is `shareURLPrefix` and its token (`shortGUID`).
    case cloudKit(zoneID: JSONValue, shareURLPrefix: String)
}

/// What a `records/resolve` or `records/accept` result says besides the
/// share (the reference's Share Metadata Dictionary): the deployment's
/// container and environment, and where share URLs point.
public struct CloudKitShareMetadataStyle: Sendable {
    public var container: String
    public var environment: String
    public var shareURLPrefix: String

    /// A result's root record, asked for (`shouldFetchRootRecord`): its
    /// keys (`rootRecordDesiredKeys`; nil: every field) and how numbers
    /// are written.
    public struct RootRecord: Sendable, Equatable {
        public var desiredKeys: [String]?
        public var numbersAsStrings: Bool

        public init(desiredKeys: [String]?, numbersAsStrings: Bool) {
            self.desiredKeys = desiredKeys
            self.numbersAsStrings = numbersAsStrings
        }
    }

    public init(container: String, environment: String, shareURLPrefix: String) {
        self.container = container
        self.environment = environment
        self.shareURLPrefix = shareURLPrefix
    }
}

extension Projection {
    /// A share (or NULL) from the share row that `condition` picks, as the
    /// rendering asks.
    /// `owner`: the share's owner's id where the statement knows it (bound,
    /// or as `ZoneReference.ownerValue` names it), for the subqueries of
    /// its participants and log: Citus routes a correlated subquery only
    /// given the value itself (DECISIONS 170).
    static func share(_ rendering: ShareRendering, owner: SQL? = nil, _ builder: inout SQLBuilder, where condition: (SQL) -> SQL) throws -> SQL {
        switch rendering {
        case .graphQL(let fields, let request):
            return try share(fields, request: request, owner: owner, &builder, where: condition)
        case .cloudKit(let zoneID, let prefix):
            return cloudKitShare(zoneID: zoneID, shareURLPrefix: prefix, owner: owner, &builder, where: condition)
        }
    }

    /// A share as the reference's share record: `recordName`
    /// (`cloudkit.zoneshare` for a zone's, `cloudkit.share.<root>` for a
    /// hierarchy's), `recordType` `cloudkit.share`, `publicPermission`,
    /// `owner`, `participants` and `currentUserParticipant` (the caller's
    /// own; the reference's participant dictionaries; row-level security
    /// decides whom the caller sees, as for GraphQL's `Share`), the title
    /// as the `cloudkit.title` field, `shortGUID` (the reference's ShortGUID
    /// Dictionary, `{value}`) and `url`, and for a hierarchy the root as
    /// `share`.
    static func cloudKitShare(
        zoneID: JSONValue, shareURLPrefix: String, owner ownerValue: SQL? = nil, _ builder: inout SQLBuilder, where condition: (SQL) -> SQL
    ) -> SQL {
        let s = builder.alias("s"), root = builder.alias("sr"), p = builder.alias("p"), user = builder.alias("pu")
        let zone = builder.bind(json: zoneID), prefix = builder.bind(shareURLPrefix)
        let participant = cloudKitParticipant(p, user: user)
        let participants: SQL = "FROM canopy.participants \(p) LEFT JOIN canopy.users \(user) ON \(user).id = \(p).user_id WHERE \(p).owner_id = \(ownerValue ?? "\(s).owner_id") AND \(p).share_id = \(s).id"
        return """
            (SELECT (jsonb_build_object('recordName', coalesce('cloudkit.share.' || \(root).record_name, 'cloudkit.zoneshare'), \
            'recordType', 'cloudkit.share', 'deleted', false, 'zoneID', \(zone), \
            'publicPermission', coalesce(\(s).public_permission, 'NONE'), \
            'owner', (SELECT \(participant) \(participants) AND \(p).role = 'OWNER'), \
            'participants', (SELECT coalesce(jsonb_agg(\(participant) ORDER BY \(p).role <> 'OWNER', \(p).id), '[]') \
            \(participants) AND \(p).status <> 'REMOVED'), \
            'currentUserParticipant', (SELECT \(participant) \(participants) AND \(p).user_id = canopy.current_user_id() LIMIT 1), \
            'fields', CASE WHEN \(s).title IS NULL THEN '{}'::jsonb \
            ELSE jsonb_build_object('cloudkit.title', jsonb_build_object('value', \(s).title, 'type', 'STRING')) END, \
            'shortGUID', jsonb_build_object('value', \(s).url_token), 'url', \(prefix)::text || \(s).url_token) \
            || CASE WHEN \(root).record_name IS NULL THEN '{}'::jsonb \
            ELSE jsonb_build_object('share', jsonb_build_object('recordName', \(root).record_name, 'zoneID', \(zone))) END) \
            FROM canopy.shares \(s) LEFT JOIN canopy.records \(root) ON \(root).owner_id = \(s).owner_id AND \(root).id = \(s).root_record_id \
            WHERE \(condition(s)))
            """
    }

    /// A participant row `p` (its user `u`, if any) as the reference's
    /// share participant dictionary: `type` (OWNER, ADMINISTRATOR, USER or
    /// PUBLIC_USER), `permission`, `acceptanceStatus` (INVITED for
    /// Canopy's PENDING) and `userIdentity`.
    static func cloudKitParticipant(_ p: SQL, user u: SQL) -> SQL {
        """
        jsonb_build_object('type', CASE \(p).role WHEN 'OWNER' THEN 'OWNER' WHEN 'ADMINISTRATOR' THEN 'ADMINISTRATOR' \
        WHEN 'PUBLIC_USER' THEN 'PUBLIC_USER' ELSE 'USER' END, \
        'permission', coalesce(\(p).permission, 'UNKNOWN'), \
        'acceptanceStatus', CASE \(p).status WHEN 'PENDING' THEN 'INVITED' WHEN 'ACCEPTED' THEN 'ACCEPTED' \
        WHEN 'REMOVED' THEN 'REMOVED' ELSE 'UNKNOWN' END, \
        'userIdentity', jsonb_build_object('userRecordName', \(u).record_name, \
        'lookupInfo', jsonb_build_object('emailAddress', coalesce(\(u).email, \(p).email), \
        'phoneNumber', coalesce(\(u).phone, \(p).phone), 'userRecordName', \(u).record_name), \
        'nameComponents', \(cloudKitNameComponents("coalesce(\(u).display_name, \(u).name)"))))
        """
    }

    /// A person's name as the reference's `nameComponents`: the first word
    /// as `givenName`, the rest as `familyName` (Canopy keeps one name).
    static func cloudKitNameComponents(_ name: SQL) -> SQL {
        """
        (SELECT jsonb_build_object('givenName', nullif(split_part(n.name, ' ', 1), ''), \
        'familyName', CASE WHEN strpos(n.name, ' ') > 0 THEN nullif(substr(n.name, strpos(n.name, ' ') + 1), '') END) \
        FROM (SELECT btrim(\(name)) AS name) n)
        """
    }

    /// `canopy.share_view`'s row `m` as the reference's Share Metadata
    /// Dictionary, for `records/resolve` and `records/accept`: the zone in
    /// the shared database (the caller's view of it), the owner's identity,
    /// the caller's permission, status and type in the share, its URL,
    /// `shortGUID` as the ShortGUID Dictionary, the share record (`share`:
    /// its title and type fields, public permission and the caller's own
    /// participant), and with `rootRecord` the hierarchy's root as a record
    /// dictionary with only `rootRecord`'s keys (nil: every field), read
    /// through `canopy.share_root_preview` (for whoever may open the share).
    static func cloudKitShareMetadata(
        _ style: CloudKitShareMetadataStyle, shortGUID: String, rootRecord: CloudKitShareMetadataStyle.RootRecord?,
        root known: KnownRoot, _ builder: inout SQLBuilder
    ) -> SQL {
        let container = builder.bind(style.container), environment = builder.bind(style.environment)
        let prefix = builder.bind(style.shareURLPrefix), guid = builder.bind(shortGUID)
        let zoneID: SQL = """
            jsonb_strip_nulls(jsonb_build_object('zoneName', m.zone_name, \
            'zoneType', CASE WHEN m.zone_name = '_defaultZone' THEN 'DEFAULT_ZONE' ELSE 'REGULAR_CUSTOM_ZONE' END, \
            'ownerRecordName', m.owner_name))
            """
        let participantType: SQL = """
            CASE m.role WHEN 'OWNER' THEN 'OWNER' WHEN 'ADMINISTRATOR' THEN 'ADMINISTRATOR' \
            WHEN 'PUBLIC_USER' THEN 'PUBLIC_USER' WHEN 'PRIVATE_USER' THEN 'USER' END
            """
        let participantStatus: SQL = "CASE m.status WHEN 'PENDING' THEN 'INVITED' WHEN 'ACCEPTED' THEN 'ACCEPTED' WHEN 'REMOVED' THEN 'REMOVED' END"
        // The share record's fields: its title, type and thumbnail, as a
        // share record carries them (each only when set).
        let shareFields: SQL = """
            jsonb_strip_nulls(jsonb_build_object(\
            'cloudkit.title', CASE WHEN m.title IS NOT NULL THEN jsonb_build_object('value', m.title, 'type', 'STRING') END, \
            'cloudkit.type', CASE WHEN m.share_type IS NOT NULL THEN jsonb_build_object('value', m.share_type, 'type', 'STRING') END, \
            'cloudkit.thumbnailImageData', CASE WHEN m.thumbnail IS NOT NULL THEN jsonb_build_object('value', \(base64("m.thumbnail")), 'type', 'BYTES') END))
            """
        let me: SQL = """
            CASE WHEN m.role IS NOT NULL THEN jsonb_build_object('type', \(participantType), 'permission', m.permission, \
            'acceptanceStatus', \(participantStatus), 'userIdentity', jsonb_build_object('userRecordName', \
            (SELECT u.record_name FROM canopy.users u WHERE u.id = canopy.current_user_id()))) END
            """
        var root: SQL = "'{}'::jsonb"
        if let rootRecord {
            // Rendered with the record style, in the zone as the caller sees it.
            var recordStyle = CloudKitRecordStyle(zoneID: .null, desiredKeys: nil, numbersAsStrings: rootRecord.numbersAsStrings)
            recordStyle.zoneIDSQL = "(\(zoneID))::text"
            recordStyle.knownRoot = (known.ownerID, known.recordID)
            let record = cloudKitRecord(recordStyle, &builder)
            let keys = builder.bind(rootRecord.desiredKeys)
            root = """
                coalesce((SELECT jsonb_build_object('rootRecord', (\(record))::jsonb) \
                FROM canopy.share_root_preview(\(guid)::text, \(keys)::text[]) r), '{}'::jsonb)
                """
        }
        return """
            (jsonb_build_object('containerIdentifier', \(container)::text, 'environment', \(environment)::text, \
            'databaseScope', CASE WHEN m.role = 'OWNER' THEN 'PRIVATE' ELSE 'SHARED' END, \
            'shortGUID', jsonb_build_object('value', \(guid)::text), 'zoneID', \(zoneID), \
            'ownerIdentity', jsonb_build_object('userRecordName', m.owner_name, 'nameComponents', \(cloudKitNameComponents("m.owner_display_name"))), \
            'participantPermission', m.permission, \
            'participantStatus', \(participantStatus), \
            'participantType', \(participantType), \
            'webpageURL', \(prefix)::text || m.url_token, \
            'share', jsonb_strip_nulls(jsonb_build_object(\
            'recordName', coalesce('cloudkit.share.' || m.root_record_name, 'cloudkit.zoneshare'), 'recordType', 'cloudkit.share', \
            'fields', \(shareFields), 'publicPermission', m.public_permission, \
            'shortGUID', jsonb_build_object('value', \(guid)::text), 'url', \(prefix)::text || m.url_token, 'zoneID', \(zoneID), \
            'currentUserParticipant', \(me)))) \
            || CASE WHEN m.root_record_name IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('rootRecordName', m.root_record_name) END \
            || \(root))
            """
    }
}
