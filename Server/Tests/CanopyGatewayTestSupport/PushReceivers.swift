import AsyncHTTPClient
import CanopyAdmin
import CanopyEncoding
import CanopyRequestStore
import CanopyTestSupport
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdHTTP2
import JWTKit
import NIOCore
import NIOSSL
import ServiceLifecycle
import Testing

/// `Server/Tests/python/webpush_endpoint.py`: a browser's subscription keys and a
/// push service on loopback, decrypting with http_ece and checking VAPID
/// with PyJWT. Stops when dropped (its stdin closes).
final class WebPushEndpointProcess: Sendable {
    let process: Process
    let input: Pipe
    let port: Int
    let p256dh: String
    let auth: String

    init() throws {
        let words: [String]
        (process, input, words) = try PythonService.start("webpush_endpoint.py", words: 4)
        guard let port = Int(words[1]) else { throw PushTestFailure("webpush_endpoint.py said \(words)") }
        self.port = port
        p256dh = words[2]
        auth = words[3]
    }

    func endpoint(_ name: String) -> String { "http://127.0.0.1:\(port)/push/\(name)" }

    /// Every message so far: path, decrypted payload, headers, problems.
    func received() async throws -> [[String: Any]] {
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/received"), timeout: .seconds(5))
        let body = try await response.body.collect(upTo: 1 << 20)
        return try JSONSerialization.jsonObject(with: Data(buffer: body)) as? [[String: Any]] ?? []
    }

    deinit {
        try? input.fileHandleForWriting.close()
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}

/// A helper script of Server/Tests/python run as a service: started with a pipe
/// on its stdin (it stops when that closes), and its first line read,
/// `ready <words…>`.
enum PythonService {
    static func start(_ script: String, words count: Int) throws -> (Process, Pipe, [String]) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "\(Repository.root)/Server/Tests/python/\(script)"]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        let words = String(decoding: line, as: UTF8.self).split(whereSeparator: \.isWhitespace).map(String.init)
        guard words.count == count, words.first == "ready" else {
            kill(process.processIdentifier, SIGKILL)
            throw PushTestFailure("\(script) did not start: \(String(decoding: line, as: UTF8.self))")
        }
        return (process, input, words)
    }
}

struct PushTestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A local server in APNs's shape: HTTP/2 over TLS (a certificate made by
/// openssl for the test, trusted through `--push-ca-file`), `POST
/// /3/device/<token>`, checking the provider token's ES256 signature with
/// the test's key and the headers Apple requires; 410 Unregistered for
/// tokens starting with "dead".
final class APNsTestServer: Sendable {
    let port: Int
    let log = PushLog()
    let certificateFile: String
    let credentials: (pem: String, keyID: String, teamID: String)
    private let task: Task<Void, any Error>

    init(topic: String) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("apns-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        certificateFile = "\(directory)/cert.pem"
        let keyFile = "\(directory)/key.pem"
        let openssl = try Subprocess.start("/usr/bin/env", [
            "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", keyFile, "-out", certificateFile, "-days", "2", "-subj", "/CN=localhost",
            "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
        ]).wait()
        guard openssl.status == 0 else { throw PushTestFailure("openssl: \(openssl.output)") }

        let signingKey = P256.Signing.PrivateKey()
        credentials = (signingKey.pemRepresentation, "ABC123DEFG", "TEAM123456")
        let verifier = JWTKeyCollection()
        await verifier.add(ecdsa: try ES256PublicKey(backing: signingKey.publicKey), kid: "ABC123DEFG")

        let port = try EmbeddedCluster.freePort()
        self.port = port
        let router = Router(context: APNsRequestContext.self)
        let log = self.log
        router.post("3/device/:token") { request, context -> Response in
            let token = context.parameters.get("token") ?? ""
            let body = try await request.body.collect(upTo: 1 << 20)
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.canonicalName] = field.value }
            var problems: [String] = []
            if !context.isHTTP2 { problems.append("not HTTP/2") }
            if headers["apns-topic"] != topic { problems.append("apns-topic is \(headers["apns-topic"] ?? "missing")") }
            if headers["apns-push-type"] != "background" { problems.append("apns-push-type is \(headers["apns-push-type"] ?? "missing")") }
            if headers["apns-priority"] != "5" { problems.append("apns-priority is \(headers["apns-priority"] ?? "missing")") }
            let authorization = headers["authorization"] ?? ""
            do {
                guard authorization.hasPrefix("bearer ") else { throw PushTestFailure("authorization is not a bearer token") }
                let jwt = String(authorization.dropFirst(7))
                let claims = try await verifier.verify(jwt, as: TestAPNsClaims.self)
                if claims.iss.value != "TEAM123456" { problems.append("iss is \(claims.iss.value)") }
                if abs(claims.iat.value.timeIntervalSinceNow) > 3600 { problems.append("iat is an hour away") }
                let header = try JSONSerialization.jsonObject(with: Base64URL.decode(jwt.split(separator: ".")[0]) ?? Data()) as? [String: Any]
                if header?["kid"] as? String != "ABC123DEFG" { problems.append("kid is \(String(describing: header?["kid"]))") }
            } catch {
                problems.append("provider token: \(error)")
            }
            let dead = token.hasPrefix("dead")
            let status = dead ? 410 : await log.answer(success: 200)
            await log.record(ReceivedPush(path: request.uri.path, headers: headers, body: String(buffer: body), status: status, problems: problems))
            return Response(status: .init(code: status), body: .init(byteBuffer: ByteBuffer(string: dead ? #"{"reason":"Unregistered"}"# : "")))
        }
        let tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(certificateFile).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: keyFile, format: .pem))
        )
        let (ready, running) = AsyncStream<Void>.makeStream()
        let app = Application(
            router: router, server: try .http2Upgrade(tlsConfiguration: tls),
            configuration: .init(address: .hostname("127.0.0.1", port: port)), onServerRunning: { _ in running.yield() }
        )
        task = Task { try await app.runService(gracefulShutdownSignals: []) }
        var iterator = ready.makeAsyncIterator()
        _ = await iterator.next()
    }

    var url: String { "https://localhost:\(port)" }

    deinit { task.cancel() }
}

struct TestAPNsClaims: JWTPayload {
    var iss: IssuerClaim
    var iat: IssuedAtClaim
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// Knows whether its request came on an HTTP/2 stream.
struct APNsRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let isHTTP2: Bool

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        isHTTP2 = String(describing: type(of: source.channel)).contains("HTTP2")
    }
}
