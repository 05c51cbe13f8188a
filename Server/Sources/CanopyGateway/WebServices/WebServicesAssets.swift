import CanopyAssets
import CanopyPlanner
import CanopyRequestStore
import Foundation
import Hummingbird
import Logging

/// The reference's two-step asset upload. `assets/upload` answers, for
/// each asset field asked, a URL the caller posts the file's bytes to,
/// signed for that caller and good for 15 minutes (as CloudKit's); the
/// post stores the bytes as `POST /assets` does and answers the asset
/// dictionary (`singleFile`) whose `receipt` (Canopy's upload token) the
/// record is then saved with. Downloads are the records' `downloadURL`s.
enum WebServicesAssets {
    /// The upload URL's path after `/database/1/{container}/{environment}/`.
    static let receivePath = "assets/receive"
    static let uploadLifetime: TimeInterval = 15 * 60

    static func upload(_ call: WebServicesCall) async throws -> [String: JSONValue] {
        guard let uploadURL = call.uploadURL else {
            throw APIError(.badRequest, "this server keeps no assets (it runs without an asset store)")
        }
        guard let userID = call.userID else { throw APIError(.notAuthenticated, "sign in to upload") }
        guard case .array(let requested)? = call.body["tokens"], !requested.isEmpty else {
            throw QueryError(.badRequest, "assets/upload needs tokens, a list of {\"recordType\": …, \"fieldName\": …, \"recordName\": …}")
        }
        guard requested.count <= ModifyRecordsPlan.maximumItems else {
            throw QueryError(.limitExceeded, "assets/upload takes at most \(ModifyRecordsPlan.maximumItems) tokens")
        }
        var tokens: [JSONValue] = []
        for (index, item) in requested.enumerated() {
            guard case .object(let token) = item, case .string(let fieldName)? = token["fieldName"], Names.isFieldName(fieldName) else {
                throw QueryError(.badRequest, "tokens[\(index)] needs fieldName, an asset field's name")
            }
            let recordName = token["recordName"]?.stringValue ?? UUID().uuidString.lowercased()
            tokens.append(.object([
                "recordName": .string(recordName), "fieldName": .string(fieldName), "url": .string(try await uploadURL(userID)),
            ]))
        }
        return ["tokens": .array(tokens)]
    }

    /// `POST …/assets/receive?user=…&expires=…&signature=…`: the bytes.
    static func receive(
        _ request: Request, parameters: FormEncodedQuery, settings: AssetSettings?, database: RequestDatabase,
        signer: (@Sendable (Logger) async throws -> AssetURLSigner)?, context: CanopyRequestContext
    ) async throws -> Response {
        guard let settings, let signer else { throw APIError(.badRequest, "this server keeps no assets (it runs without an asset store)") }
        guard let user = parameters["user"].flatMap(Int64.init), let expires = parameters["expires"].flatMap(Int64.init),
              let signature = parameters["signature"] else {
            throw APIError(.badRequest, "an upload URL is …/assets/receive?user=…&expires=…&signature=…, as assets/upload gives it")
        }
        guard try await signer(context.logger).verifyUpload(user: user, expires: expires, signature: signature) else {
            throw APIError(.permissionFailure, "the upload URL's signature is not valid or it expired (they last 15 minutes): ask assets/upload again",
                           status: .forbidden)
        }
        let (token, stored) = try await AssetController.receive(request, as: user, settings: settings, database: database, context: context)
        return WebServicesResponse.ok(["singleFile": .object([
            "fileChecksum": .string(stored.digest.hex), "size": .int(stored.size), "receipt": .string(token.text),
            "wrappingKey": .null, "referenceChecksum": .null,
        ])])
    }
}
