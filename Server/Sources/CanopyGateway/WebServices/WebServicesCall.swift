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
    let body: WebServicesRequestBody
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
        CloudKitRecordStyle(zoneID: zone.dictionary, desiredKeys: try body.desiredKeys(), numbersAsStrings: body.numbersAsStrings,
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
    var numbersAsStrings: Bool { body.numbersAsStrings }

    /// A zone the request names (CanopyWebServices reads it).
    typealias Zone = WebServicesZoneID

    /// The zone ID dictionary at `place` (the default zone when absent), in
    /// this request's database.
    func zone(_ value: JSONValue?, at place: String = "zoneID") throws(QueryError) -> Zone {
        try WebServicesZoneID.read(value, at: place, scope: databaseScope)
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
        WebServicesWriter.itemError(key, value, code: code, reason: reason, requestID: requestID)
    }

    /// A failure of a whole item (a zone in changes/zone, say), from any error.
    func itemError(_ key: String, _ value: JSONValue, error: any Error) -> JSONValue {
        let apiError = APIError(error, requestID: requestID, logger: logger)
        return itemError(key, value, code: WebServicesCode(apiError.code, statusCode: apiError.statusOverride.map { Int($0.code) }), reason: apiError.message)
    }
}
