import CanopyEncoding
import Crypto
import Foundation
import Hummingbird
import NIOCore

/// A flat directory of static files read once when the gateway starts and
/// served from memory: the web console (`web/`: HTML, CSS, ES modules, no
/// build step), reached as `/console/<name>`, and CanopyJS (`clients/js/`),
/// reached as `/js/<name>`. Only names of the kinds below are served.
public struct ConsoleFiles: Sendable {
    /// One file's bytes and what the response says of them.
    public struct File: Sendable {
        public let bytes: ByteBuffer
        public let contentType: String
        /// A strong validator: the first 16 bytes of the content's SHA-256.
        public let entityTag: String
    }

    public let directory: String
    let files: [String: File]

    /// The content types of the kinds of file the console is made of.
    static let contentTypes: [String: String] = [
        "html": "text/html; charset=utf-8",
        "css": "text/css; charset=utf-8",
        "js": "text/javascript; charset=utf-8",
        "svg": "image/svg+xml",
        "png": "image/png",
        "ico": "image/x-icon",
        "json": "application/json",
    ]

    /// Reads every servable file of `directory`; it must hold `required`.
    /// `what` and `option` name the directory and its flag in errors.
    public static func load(
        directory: String, required: String = "index.html", what: String = "the console's",
        option: String = "--web-dir, set CANOPY_WEB_DIR, or turn the console off with --no-console"
    ) throws(GatewayConfigurationError) -> ConsoleFiles {
        let manager = FileManager.default
        var isDirectory: ObjCBool = false
        guard manager.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw GatewayConfigurationError(message: "\(what) directory '\(directory)' does not exist (pass \(option))")
        }
        let names: [String]
        do {
            names = try manager.contentsOfDirectory(atPath: directory)
        } catch {
            throw GatewayConfigurationError(message: "\(what) directory '\(directory)' cannot be read: \(error.localizedDescription)")
        }
        var files: [String: File] = [:]
        for name in names.sorted() where isServable(name) {
            let path = (directory as NSString).appendingPathComponent(name)
            guard let data = manager.contents(atPath: path) else {
                throw GatewayConfigurationError(message: "\(what) file '\(path)' cannot be read")
            }
            let bytes = [UInt8](data)
            let digest = Array(SHA256.hash(data: bytes).prefix(16))
            let type = contentTypes[extensionOf(name)] ?? "application/octet-stream"
            files[name] = File(bytes: ByteBuffer(bytes: bytes), contentType: type, entityTag: "\"\(Hex.encode(digest))\"")
        }
        guard files[required] != nil else {
            throw GatewayConfigurationError(message: "\(what) directory '\(directory)' has no \(required) (pass \(option))")
        }
        return ConsoleFiles(directory: directory, files: files)
    }

    /// The file named `name` (a bare file name of a known kind), if any.
    public func file(named name: String) -> File? {
        Self.isServable(name) ? files[name] : nil
    }

    /// Letters, digits, `-`, `_` and one extension of a known kind: no
    /// paths, no hidden files.
    static func isServable(_ name: String) -> Bool {
        guard !name.hasPrefix("."), name.count <= 100, contentTypes[extensionOf(name)] != nil else { return false }
        return name.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII && (CharacterSet.alphanumerics.contains(scalar) || scalar == "-" || scalar == "_" || scalar == ".")
        } && name.filter({ $0 == "." }).count == 1
    }

    static func extensionOf(_ name: String) -> String {
        name.split(separator: ".").last.map { String($0).lowercased() } ?? ""
    }
}

extension ConsoleFiles {
    /// The answer to `GET` of file `name`: the bytes with their type, the
    /// pages' headers and an ETag (`no-cache`, so a new release is picked
    /// up at once), 304 when the client holds this copy, 404 for any name
    /// not served.
    func response(named name: String, to request: Request) -> Response {
        guard let file = file(named: name) else {
            return Response(status: .notFound, headers: [.contentType: "text/plain; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: "no such file\n")))
        }
        var headers = PageHeaders.fields(contentType: file.contentType, cache: "no-cache")
        headers[.eTag] = file.entityTag
        if request.hasCurrentCopy(of: file.entityTag) {
            return Response(status: .notModified, headers: headers)
        }
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: file.bytes))
    }
}
