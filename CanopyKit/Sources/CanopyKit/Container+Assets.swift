import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Assets (docs/API.md §11): a file set on a record is uploaded (`POST /assets`)
/// before the record is saved; a fetched record's assets are downloaded
/// into `assetCacheDirectory`, named by their SHA-256, so `fileURL` is a
/// local file as with CKAsset.
extension Container {
    /// Uploads each asset the app set from a local file, and puts the server's token in its place.
    func uploadAssets(of record: Record) async throws {
        var values = record.fieldValues
        var changed = false
        for (key, value) in values {
            let uploaded = try await upload(value)
            if uploaded != value {
                values[key] = uploaded
                changed = true
            }
        }
        if changed { record.replaceValues(values) }
    }

    private func upload(_ value: FieldValue) async throws -> FieldValue {
        switch value {
        case .asset(let asset) where asset.uploadToken == nil && asset.sha256 == nil:
            guard let fileURL = asset.fileURL else { throw CanopyError(.invalidArguments, "an asset without a file") }
            return .asset(try await upload(fileURL: fileURL, contentType: asset.contentType))
        case .list(let values):
            var uploaded: [FieldValue] = []
            for value in values { uploaded.append(try await upload(value)) }
            return .list(uploaded)
        default:
            return value
        }
    }

    /// Sends a file's bytes to `POST /assets`; answers an asset carrying the upload token.
    public func upload(fileURL: URL, contentType: String? = nil) async throws -> Asset {
        let bytes: Data
        do { bytes = try Data(contentsOf: fileURL) } catch {
            throw CanopyError(.invalidArguments, "cannot read \(fileURL.path): \(error.localizedDescription)")
        }
        let type = contentType ?? Self.contentType(forExtension: fileURL.pathExtension)
        guard var token = try await transport.tokens.current() else {
            throw CanopyError(.notAuthenticated, "uploading an asset needs a signed-in container (a token provider)")
        }
        for attempt in 0..<2 {
            var request = URLRequest(url: baseURL.appendingPathComponent("assets"))
            request.httpMethod = "POST"
            request.setValue(type, forHTTPHeaderField: "Content-Type")
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            request.httpBody = bytes
            let (data, http) = try await transport.send(request)
            if http.statusCode == 401, attempt == 0 {
                token = try await transport.tokens.refresh(after: token) ?? token
                continue
            }
            let answer = try JSON(parsing: data)
            if http.statusCode == 413 {
                // QUOTA_EXCEEDED (no room left) or LIMIT_EXCEEDED (larger than any upload may be).
                if let error = answer["errors"]?.array?.first, error["extensions"]?["code"]?.string == CanopyError.Code.quotaExceeded.rawValue {
                    throw CanopyError(.quotaExceeded, error["message"]?.string ?? "your storage is full")
                }
                throw CanopyError(.limitExceeded, "\(fileURL.lastPathComponent) is larger than the server accepts")
            }
            guard (200..<300).contains(http.statusCode), let uploadToken = answer["uploadToken"]?.string else {
                throw GraphQLTransport.error(answer["errors"]?.array?.first ?? answer, retryAfter: nil, status: http.statusCode)
            }
            return Asset(fileURL: fileURL, size: answer["size"]?.int.map(Int.init), contentType: type,
                         sha256: nil, downloadURL: nil, uploadToken: uploadToken)
        }
        throw CanopyError(.notAuthenticated, "the server refused the token")
    }

    /// Downloads each asset of a fetched record that is not cached yet, and points its `fileURL` at the local copy.
    func localizeAssets(of record: Record) async throws {
        var values = record.fieldValues
        var changed = false
        for (key, value) in values {
            let local = try await localize(value)
            if local != value {
                values[key] = local
                changed = true
            }
        }
        if changed { record.replaceValues(values) }
    }

    private func localize(_ value: FieldValue) async throws -> FieldValue {
        switch value {
        case .asset(let asset) where asset.fileURL == nil && asset.sha256 != nil:
            return .asset(try await download(asset))
        case .list(let values):
            var local: [FieldValue] = []
            for value in values { local.append(try await localize(value)) }
            return .list(local)
        default:
            return value
        }
    }

    private func download(_ asset: Asset) async throws -> Asset {
        guard let sha256 = asset.sha256, sha256.allSatisfy(\.isHexDigit), let url = asset.downloadURL else { return asset }
        let file = assetCacheDirectory.appendingPathComponent(sha256)
        if !FileManager.default.fileExists(atPath: file.path) {
            let (data, http) = try await transport.send(URLRequest(url: url))
            guard http.statusCode == 200 else {
                throw CanopyError(http.statusCode == 503 ? .serviceUnavailable : .serverResponseLost,
                                  "downloading asset \(sha256.prefix(12)): HTTP \(http.statusCode)")
            }
            try FileManager.default.createDirectory(at: assetCacheDirectory, withIntermediateDirectories: true)
            let partial = assetCacheDirectory.appendingPathComponent("\(sha256).\(UUID().uuidString).partial")
            try data.write(to: partial)
            if (try? FileManager.default.moveItem(at: partial, to: file)) == nil {
                try? FileManager.default.removeItem(at: partial)  // another download got there first
            }
        }
        return Asset(fileURL: file, size: asset.size, contentType: asset.contentType, sha256: sha256,
                     downloadURL: asset.downloadURL, uploadToken: nil)
    }

    static func contentType(forExtension ext: String) -> String {
        switch ext.lowercased() {
        case "jpg", "jpeg": return "image/jpeg"
        case "png": return "image/png"
        case "gif": return "image/gif"
        case "heic": return "image/heic"
        case "pdf": return "application/pdf"
        case "txt": return "text/plain"
        case "json": return "application/json"
        default: return "application/octet-stream"
        }
    }
}
