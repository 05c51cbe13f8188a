import CanopyAssets
import CanopyEncoding
import CanopyRequestStore
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// `POST /assets` (docs/API.md §11): the request body streams into the asset
/// store, hashed on the way, never held whole in memory; the answer is an
/// upload token the uploader attaches to a record by saving it in an
/// `ASSET` field. `GET /assets/<sha256>?…`: a signed download URL, as reads
/// of records hand them out, streamed from the store with ranges and ETags.
struct AssetController {
    let database: RequestDatabase
    let settings: AssetSettings
    let authenticator: Authenticator
    let signer: @Sendable (_ logger: Logger) async throws -> AssetURLSigner

    /// The content types a download may show inline: raster pictures.
    static let inlineTypes: Set<String> = ["image/png", "image/jpeg", "image/gif", "image/webp", "image/avif"]

    func register(on router: Router<CanopyRequestContext>) {
        router.post("assets") { request, context in
            try await upload(request, context: context)
        }
        router.get("assets/:sha256") { request, context in
            try await download(request, context: context)
        }
    }

    func download(_ request: Request, context: CanopyRequestContext) async throws -> Response {
        let query = request.uri.queryParameters
        guard let digest = context.parameters.get("sha256").flatMap(AssetDigest.init(hex:)),
              let contentType = query.get("type"), let expires = query.get("expires").flatMap(Int64.init),
              let signature = query.get("signature")
        else {
            throw APIError(.badRequest, "a download URL is /assets/<sha256>?type=…&expires=…&signature=…, as a record's downloadURL gives it")
        }
        let signer: AssetURLSigner
        do {
            signer = try await self.signer(context.logger)
        } catch {
            throw APIError(error, requestID: context.requestID, logger: context.logger)
        }
        guard signer.verify(sha256: digest.hex, contentType: contentType, expires: expires, signature: signature) else {
            throw APIError(.permissionFailure, "the download URL's signature is not valid or it expired; read the record again for a new one",
                           status: .forbidden)
        }
        guard let size = try await settings.store.size(of: digest) else {
            throw APIError(.unknownItem, "no such asset", status: .notFound)
        }
        var headers: HTTPFields = [.eTag: "\"\(digest.hex)\"", .acceptRanges: "bytes", .cacheControl: "private, max-age=3600"]
        if request.hasCurrentCopy(of: "\"\(digest.hex)\"") {
            return Response(status: .notModified, headers: headers)
        }
        headers[.contentType] = contentType
        // Downloads share the console's origin: a file is never run as a
        // page there. Nothing is sniffed, a document (HTML, SVG…) loads
        // sandboxed with no script, and anything but a raster picture is
        // saved, not shown.
        headers[.contentSecurityPolicy] = "default-src 'none'; sandbox"
        headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        if !Self.inlineTypes.contains(contentType.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? "") {
            headers[.contentDisposition] = "attachment"
        }
        var range: Range<Int64> = 0..<size
        var status: HTTPResponse.Status = .ok
        if let header = request.headers[.range] {
            switch ByteRange.parse(header, size: size) {
            case .whole:
                break
            case .unsatisfiable:
                headers[.contentRange] = "bytes */\(size)"
                return Response(status: .rangeNotSatisfiable, headers: headers)
            case .part(let part):
                range = part
                status = .partialContent
                headers[.contentRange] = "bytes \(part.lowerBound)-\(part.upperBound - 1)/\(size)"
            }
        }
        let store = settings.store
        let selected = range
        return Response(status: status, headers: headers, body: ResponseBody(contentLength: Int(selected.count)) { writer in
            try await store.read(digest, range: selected) { try await writer.write($0) }
            try await writer.finish(nil)
        })
    }

    func upload(_ request: Request, context: CanopyRequestContext) async throws -> Response {
        var context = context
        try await authenticator.authenticate(request, context: &context)
        guard let userID = context.userID else { throw APIError(.notAuthenticated, "no caller") }
        let (token, stored) = try await Self.receive(request, as: userID, settings: settings, database: database, context: context)
        let body: [String: Any] = ["uploadToken": token.text, "size": stored.size, "sha256": stored.digest.hex]
        return Response(
            status: .ok,
            headers: [.contentType: "application/json"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])))
        )
    }

    /// Streams a request's body into the store and notes the upload as
    /// `userID`'s: the upload token and what was stored. Used by `POST
    /// /assets` and by Web Services' signed upload URLs alike.
    static func receive(
        _ request: Request, as userID: Int64, settings: AssetSettings, database: RequestDatabase, context: CanopyRequestContext
    ) async throws -> (UploadToken, StoredAsset) {
        let length = request.headers[.contentLength].flatMap(Int64.init)
        if let length, length > settings.maximumSize { throw Self.tooLarge(settings.maximumSize) }
        // The room the uploader has: an upload that cannot fit is refused
        // before a byte is read (with a Content-Length) or as its bytes pass
        // it (streamed), and keeps nothing (issue 64: a streamed upload was
        // kept whole, then refused). The database checks again, exactly,
        // when it records the upload.
        let room: (used: Int64, quota: Int64?)
        do { room = try await database.storageRoom(of: userID, logger: context.logger) } catch {
            throw APIError(error, requestID: context.requestID, logger: context.logger)
        }
        let free = room.quota.map { max($0 - room.used, 0) }
        if let quota = room.quota, let free, let length, length > free {
            throw Self.quotaExceeded(needing: "\(length) bytes", free: free, quota: quota)
        }
        let limit = min(settings.maximumSize, free ?? .max)
        let contentType = request.headers[.contentType].map { String($0.prefix(255)) }.flatMap { $0.isEmpty ? nil : $0 }
            ?? "application/octet-stream"
        let stored: StoredAsset
        do {
            stored = try await settings.store.store(request.body, limit: limit)
        } catch let error as AssetError where error.kind == .tooLarge(limit: limit) {
            if let quota = room.quota, let free, limit < settings.maximumSize {
                throw Self.quotaExceeded(needing: "more than \(free) bytes", free: free, quota: quota)
            }
            throw Self.tooLarge(settings.maximumSize)
        } catch {
            throw APIError(error, requestID: context.requestID, logger: context.logger).with(status: .internalServerError)
        }
        let token = UploadToken.make()
        do {
            _ = try await database.recordUpload(
                NewUpload(tokenHash: token.hash, sha256: stored.digest.hex, size: stored.size, contentType: contentType),
                as: userID, logger: context.logger
            )
        } catch {
            throw APIError(error, requestID: context.requestID, logger: context.logger)
        }
        return (token, stored)
    }

    static func quotaExceeded(needing: String, free: Int64, quota: Int64) -> APIError {
        StorageMetrics.refusals.increment()
        return APIError(.quotaExceeded, "your storage is full: the upload needs \(needing), and \(free) of your quota of \(quota) bytes are free; nothing was kept",
                        status: .contentTooLarge)
    }

    static func tooLarge(_ limit: Int64) -> APIError {
        APIError(.limitExceeded, "the asset is larger than the limit of \(limit) bytes (--max-asset-size); nothing was kept", status: .contentTooLarge)
    }
}

/// An upload token: `upl_` and 64 hex digits of randomness. The client
/// holds the text; the database keeps its SHA-256.
struct UploadToken {
    var text: String
    var hash: [UInt8] { Array(SHA256.hash(data: Data(text.utf8))) }

    static func make() -> UploadToken {
        var generator = SystemRandomNumberGenerator()
        return UploadToken(text: "upl_" + Hex.encode((0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }))
    }
}

/// Where uploads go, how large they may be, and how long a download URL lasts.
public struct AssetSettings: Sendable {
    public var store: any AssetStore
    public var maximumSize: Int64
    public var downloadLifetime: TimeInterval

    /// CloudKit's limit for an asset: 50 MB.
    public static let defaultMaximumSize: Int64 = 50 * 1024 * 1024

    public init(store: any AssetStore, maximumSize: Int64 = AssetSettings.defaultMaximumSize, downloadLifetime: TimeInterval = 3600) {
        self.store = store
        self.maximumSize = maximumSize
        self.downloadLifetime = downloadLifetime
    }
}
