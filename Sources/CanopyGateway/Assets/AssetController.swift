import CanopyAssets
import CanopyStore
import Crypto
import Foundation
import Hummingbird

/// `POST /assets` (API.md §11): the request body streams into the asset
/// store, hashed on the way, never held whole in memory; the answer is an
/// upload token the uploader attaches to a record by saving it in an
/// `ASSET` field.
struct AssetController {
    let database: RequestDatabase
    let settings: AssetSettings
    let authenticator: Authenticator

    func register(on router: Router<CanopyRequestContext>) {
        router.post("assets") { request, context in
            try await upload(request, context: context)
        }
    }

    func upload(_ request: Request, context: CanopyRequestContext) async throws -> Response {
        var context = context
        if let failure = await authenticator.authenticate(request, context: &context) { return failure }
        guard let userID = context.userID else { return try failure(APIError(.notAuthenticated, "no caller"), context) }
        if let length = request.headers[.contentLength].flatMap(Int64.init), length > settings.maximumSize {
            return try failure(Self.tooLarge(settings.maximumSize), context, status: .contentTooLarge)
        }
        let contentType = request.headers[.contentType].map { String($0.prefix(255)) }.flatMap { $0.isEmpty ? nil : $0 }
            ?? "application/octet-stream"
        let stored: StoredAsset
        do {
            stored = try await settings.store.store(request.body, limit: settings.maximumSize)
        } catch let error as AssetError where error.kind == .tooLarge(limit: settings.maximumSize) {
            return try failure(Self.tooLarge(settings.maximumSize), context, status: .contentTooLarge)
        } catch {
            return try failure(APIError(error, requestID: context.requestID, logger: context.logger), context, status: .internalServerError)
        }
        let token = UploadToken.make()
        do {
            _ = try await database.recordUpload(
                NewUpload(tokenHash: token.hash, sha256: stored.digest.hex, size: stored.size, contentType: contentType),
                as: userID, logger: context.logger
            )
        } catch {
            let apiError = APIError(error, requestID: context.requestID, logger: context.logger)
            return try failure(apiError, context, status: apiError.httpStatus)
        }
        let body: [String: Any] = ["uploadToken": token.text, "size": stored.size, "sha256": stored.digest.hex]
        return Response(
            status: .ok,
            headers: [.contentType: "application/json"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])))
        )
    }

    static func tooLarge(_ limit: Int64) -> APIError {
        APIError(.limitExceeded, "the asset is larger than the limit of \(limit) bytes (--max-asset-size); nothing was kept")
    }

    func failure(_ error: APIError, _ context: CanopyRequestContext, status: HTTPResponse.Status? = nil) throws -> Response {
        GraphQLResponse.errors([error], requestID: context.requestID, status: status ?? error.httpStatus)
    }
}

/// An upload token: `upl_` and 64 hex digits of randomness. The client
/// holds the text; the database keeps its SHA-256.
struct UploadToken {
    var text: String
    var hash: [UInt8] { Array(SHA256.hash(data: Data(text.utf8))) }

    static func make() -> UploadToken {
        var generator = SystemRandomNumberGenerator()
        let digits = Array("0123456789abcdef".utf8)
        var bytes = Array("upl_".utf8)
        for _ in 0..<32 {
            let byte = UInt8.random(in: 0...255, using: &generator)
            bytes.append(digits[Int(byte >> 4)])
            bytes.append(digits[Int(byte & 0x0f)])
        }
        return UploadToken(text: String(decoding: bytes, as: UTF8.self))
    }
}

/// Where uploads go and how large they may be.
public struct AssetSettings: Sendable {
    public var store: any AssetStore
    public var maximumSize: Int64

    /// CloudKit's limit for an asset: 50 MB.
    public static let defaultMaximumSize: Int64 = 50 * 1024 * 1024

    public init(store: any AssetStore, maximumSize: Int64 = AssetSettings.defaultMaximumSize) {
        self.store = store
        self.maximumSize = maximumSize
    }
}
