import CanopyAssets
import CanopyPlanner
import CanopyWebServices
import Logging

/// One Web Services request on its way through an endpoint: the database
/// its path names, its JSON body, and the runner of its plans
/// (``PlanRunner``, the one GraphQL's fields run through too).
struct WebServicesCall {
    /// `public`, `private` or `shared`, as the path names it.
    let database: String
    let body: [String: JSONValue]
    let runner: PlanRunner
    /// Signs asset download URLs into answers that hold assets (nil: no asset store).
    let assetURLs: (@Sendable (Logger) async throws -> AssetURLSigner)?
    let recordSchemas: RecordSchemas
    let requestID: String
    let logger: Logger
    /// The deployment's container and environment, and its public URL.
    var container = ""
    var environment = ""
    var publicURL = ""
    /// The caller (nil: nobody; a web token or a key names one).
    var userID: Int64? = nil
    /// A signed upload URL for the caller's asset bytes (nil: no asset store).
    var uploadURL: (@Sendable (_ userID: Int64) async throws -> String)? = nil

    /// The database as Canopy's `DatabaseScope`.
    var scope: JSONValue {
        switch database {
        case "public": return .string("PUBLIC")
        case "shared": return .string("SHARED")
        default: return .string("PRIVATE")
        }
    }

    /// The database as the planner's scope.
    var databaseScope: DatabaseScope {
        switch database {
        case "public": return .public
        case "shared": return .shared
        default: return .private
        }
    }

    /// How the plan writes this request's records: CloudKit's dictionaries
    /// in `zone`, with the request's `desiredKeys` and `numbersAsStrings`.
    func recordStyle(zone: Zone) throws(QueryError) -> CloudKitRecordStyle {
        let keys: [String]? = switch try desiredKeys() {
        case .array(let names): names.compactMap(\.stringValue)
        default: nil
        }
        return CloudKitRecordStyle(zoneID: zone.dictionary, desiredKeys: keys, numbersAsStrings: numbersAsStrings,
                                   missingCode: WebServicesCode.notFound.rawValue, requestID: requestID)
    }

    /// An answer with a signed `downloadURL` in every asset the database
    /// marked (sql/functions/asset_marks.sql), as GraphQL's answers get
    /// theirs, and every mark removed: applied to each whole answer, so no
    /// endpoint can forget it (issue 64).
    func signingAssets(_ json: String) async throws -> String {
        guard AssetURLSigner.mayHoldAssets(json) else { return json }
        guard let signer = assetURLs else { return AssetURLSigner.removingMarks(from: json) }
        return try await signer(logger).addingDownloadURLs(to: json)
    }

    /// `numbersAsStrings`: INT64 and DOUBLE values answered as strings.
    var numbersAsStrings: Bool { body["numbersAsStrings"] == .bool(true) }

    /// The request's `desiredKeys` (nil: every field), checked.
    func desiredKeys(_ value: JSONValue? = nil) throws(QueryError) -> JSONValue {
        try Self.checkedDesiredKeys(value ?? body["desiredKeys"])
    }

    /// A `desiredKeys` value, checked: a list of field names, or null.
    static func checkedDesiredKeys(_ value: JSONValue?) throws(QueryError) -> JSONValue {
        switch value {
        case nil, .null?: return .null
        case .array(let keys)?:
            for key in keys {
                guard case .string(let name) = key, Names.isFieldName(name) else {
                    throw QueryError(.badRequest, "desiredKeys must be a list of field names")
                }
            }
            return .array(keys)
        case let other?: throw QueryError(.badRequest, "desiredKeys must be a list of field names, not \(other.typeName)")
        }
    }

    /// A zone named by a request's zone ID dictionary (the default zone when
    /// there is none): as Canopy's `ZoneID` input and as the dictionary
    /// answers carry.
    struct Zone {
        var input: JSONValue
        var dictionary: JSONValue
        var scope: DatabaseScope
        var zoneName: String
        var ownerName: String?

        /// The zone in the planner's terms, checked as GraphQL's `zone` is.
        var reference: ZoneReference {
            get throws(QueryError) { try ZoneReference(scope: scope, zoneName: zoneName, ownerName: ownerName) }
        }
    }

    func zone(_ value: JSONValue?, at place: String = "zoneID") throws(QueryError) -> Zone {
        var zoneName = "_defaultZone"
        var owner: String?
        switch value {
        case nil, .null?: break
        case .object(let zoneID)?:
            switch zoneID["zoneName"] {
            case nil, .null?: break
            case .string(let name)?: zoneName = name
            case let other?: throw QueryError(.badRequest, "\(place).zoneName must be a string, not \(other.typeName)")
            }
            switch zoneID["ownerRecordName"] {
            case nil, .null?: break
            case .string(let name)?: owner = name
            case let other?: throw QueryError(.badRequest, "\(place).ownerRecordName must be a string, not \(other.typeName)")
            }
        case let other?: throw QueryError(.badRequest, "\(place) must be a zone ID dictionary, {\"zoneName\": …}, not \(other.typeName)")
        }
        if database == "public" && owner == DatabaseScope.publicOwnerName { owner = nil }
        var input: [String: JSONValue] = ["zoneName": .string(zoneName)]
        if let owner { input["ownerName"] = .string(owner) }
        return Zone(input: .object(input), dictionary: Self.zoneID(zoneName: zoneName, owner: owner, database: database),
                    scope: databaseScope, zoneName: zoneName, ownerName: owner)
    }

    /// The reference's zone ID dictionary.
    static func zoneID(zoneName: String, owner: String?, database: String) -> JSONValue {
        var dictionary: [String: JSONValue] = [
            "zoneName": .string(zoneName),
            "zoneType": .string(zoneName == "_defaultZone" ? "DEFAULT_ZONE" : "REGULAR_CUSTOM_ZONE"),
        ]
        if database == "public" {
            dictionary["ownerRecordName"] = .string(DatabaseScope.publicOwnerName)
        } else if let owner {
            dictionary["ownerRecordName"] = .string(owner)
        }
        return .object(dictionary)
    }

    /// The schemas of the record types an answer holds, for field type tags.
    func schemas(of types: Set<String>) async throws -> [String: RecordSchema] {
        var schemas: [String: RecordSchema] = [:]
        for type in types {
            schemas[type] = try await recordSchemas.schema(of: type, refresh: false, logger: logger)
        }
        return schemas
    }

    /// An item's error inside a 200 answer.
    func itemError(_ key: String, _ value: JSONValue, code: WebServicesCode, reason: String) -> JSONValue {
        WebServicesResponse.itemError(key, value, code: code, reason: reason, requestID: requestID)
    }

    /// A failure of a whole item (a zone in changes/zone, say), from any error.
    func itemError(_ key: String, _ value: JSONValue, error: any Error) -> JSONValue {
        let apiError = APIError(error, requestID: requestID, logger: logger)
        return itemError(key, value, code: WebServicesCode(apiError.code, statusCode: apiError.statusOverride.map { Int($0.code) }), reason: apiError.message)
    }

    /// An integer of the body (`resultsLimit`), checked.
    func integer(_ key: String) throws(QueryError) -> Int64? {
        switch body[key] {
        case nil, .null?: return nil
        case .int(let number)?: return number
        case let other?: throw QueryError(.badRequest, "\(key) must be a whole number, not \(other.typeName)")
        }
    }

    /// A string of the body (`continuationMarker`, `syncToken`), checked.
    func string(_ key: String, in dictionary: [String: JSONValue]? = nil) throws(QueryError) -> String? {
        switch (dictionary ?? body)[key] {
        case nil, .null?: return nil
        case .string(let text)?: return text
        case let other?: throw QueryError(.badRequest, "\(key) must be a string, not \(other.typeName)")
        }
    }
}
