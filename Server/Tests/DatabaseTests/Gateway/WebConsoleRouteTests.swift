@testable import CanopyGatewayTestSupport
import CanopyGateway
import CanopyTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// The console's files as the gateway serves them (docs/API.md §12): from the
/// package's `web/` directory, under a strict Content-Security-Policy,
/// revalidated by ETag, and nothing outside the directory's servable files.
@Suite("Web console: files and headers")
struct WebConsoleRouteTests {
    static func console() throws -> ConsoleFiles {
        try ConsoleFiles.load(directory: "\(Repository.root)/web")
    }

    static func clientPackage() throws -> ConsoleFiles {
        try ConsoleFiles.load(directory: "\(Repository.root)/clients/js", required: "index.js")
    }

    @Test("GET /js/<file> is CanopyJS's modules (the console imports them); a page on an allowed origin may load them, another origin gets no CORS header")
    func clientPackageFiles() async throws {
        let harness = try await GatewayHarness.make()
        let configuration = GatewayConfiguration(
            crossOrigin: try CrossOriginPolicy(origins: ["http://app.example.com"]),
            console: try Self.console(), clientPackage: try Self.clientPackage()
        )
        try await harness.test(configuration: configuration) { client in
            let module = try await client.execute(uri: "/js/index.js", method: .get, headers: [.origin: "http://app.example.com"])
            #expect(module.status == .ok)
            #expect(module.headers[.contentType] == "text/javascript; charset=utf-8")
            #expect(module.headers[.accessControlAllowOrigin] == "http://app.example.com")
            #expect(String(buffer: module.body).contains("export"))
            let elsewhere = try await client.execute(uri: "/js/index.js", method: .get, headers: [.origin: "http://other.example.com"])
            #expect(elsewhere.headers[.accessControlAllowOrigin] == nil)
            for missing in ["/js/nothing.js", "/js/..%2FPackage.swift", "/js/package.json.bak", "/js/README.md"] {
                #expect(try await client.execute(uri: missing, method: .get).status == .notFound, "\(missing)")
            }
            let console = try await client.execute(uri: "/console/canopy.js", method: .get)
            #expect(String(buffer: console.body).contains("/js/"), "the console imports CanopyJS")
        }
    }

    @Test("GET / is the console's page and /console/<file> its modules, with a CSP that allows only this origin and no inline code")
    func files() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test(configuration: GatewayConfiguration(console: try Self.console())) { client in
            let page = try await client.execute(uri: "/", method: .get)
            #expect(page.status == .ok)
            #expect(page.headers[.contentType] == "text/html; charset=utf-8")
            let policy = try #require(page.headers[.contentSecurityPolicy])
            for directive in ["default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"] {
                #expect(policy.contains(directive), "\(policy)")
            }
            #expect(!policy.contains("unsafe") && !policy.contains("http"), "no inline code, no other site: \(policy)")
            #expect(String(buffer: page.body).contains("<script type=\"module\" src=\"/console/app.js\">"))

            let module = try await client.execute(uri: "/console/app.js", method: .get)
            #expect(module.status == .ok)
            #expect(module.headers[.contentType] == "text/javascript; charset=utf-8")
            let tag = try #require(module.headers[.eTag])
            let again = try await client.execute(uri: "/console/app.js", method: .get, headers: [.ifNoneMatch: tag])
            #expect(again.status == .notModified)
            #expect(again.body.readableBytes == 0)

            for missing in ["/console/nothing.js", "/console/..%2FPackage.swift", "/console/.hidden.js", "/console/README.md"] {
                #expect(try await client.execute(uri: missing, method: .get).status == .notFound, "\(missing)")
            }
        }
    }

    @Test("over plain HTTP the console goes only to this machine's clients (loopback, IPv4 or IPv6) unless the public URL is https or --console-over-http, and a loopback client through a real socket gets the page")
    func plainHTTP() async throws {
        let plain = ConsoleTransport(publicURL: "http://canopy.example.com:8080", plainHTTPAllowed: false)
        let loopback = ["127.0.0.1", "127.9.8.7", "::1", "::ffff:127.0.0.1"].map { try! SocketAddress(ipAddress: $0, port: 50_000) }
        let elsewhere = ["10.0.0.5", "192.168.1.20", "203.0.113.9", "::ffff:10.0.0.5", "fd00::1", "2001:db8::1", "128.0.0.1"]
            .map { try! SocketAddress(ipAddress: $0, port: 50_000) }
        for client in loopback { #expect(plain.allows(client: client), "\(client)") }
        for client in elsewhere { #expect(!plain.allows(client: client), "\(client)") }
        let socketFile = try SocketAddress(unixDomainSocketPath: "/tmp/canopy-test.sock")
        #expect(!plain.allows(client: socketFile))
        let proxied = ConsoleTransport(publicURL: "https://canopy.example.com", plainHTTPAllowed: false)
        let told = ConsoleTransport(publicURL: "http://canopy.example.com:8080", plainHTTPAllowed: true)
        for client in elsewhere { #expect(proxied.allows(client: client) && told.allows(client: client), "\(client)") }

        let harness = try await GatewayHarness.make()
        var configuration = GatewayConfiguration(console: try Self.console())
        configuration.publicURL = "http://canopy.example.com:8080"
        try await harness.test(configuration: configuration, live: true) { client in
            let page = try await client.execute(uri: "/", method: .get)
            let module = try await client.execute(uri: "/console/app.js", method: .get)
            #expect(page.status == .ok && module.status == .ok)
        }
    }

    @Test("every console file is loaded from this origin only: no http(s) URL, no inline script or style in the HTML")
    func nothingFromAnotherSite() throws {
        let directory = "\(Repository.root)/web"
        for name in try FileManager.default.contentsOfDirectory(atPath: directory) {
            let text = try String(contentsOfFile: "\(directory)/\(name)", encoding: .utf8)
            let urls = text.replacingOccurrences(of: "xmlns=\"http://www.w3.org/2000/svg\"", with: "")
            #expect(!urls.contains("http://") && !urls.contains("https://"), "\(name) names another site")
            if name.hasSuffix(".html") {
                #expect(!text.contains("<script>") && !text.contains("style="), "\(name) has inline code")
            }
            if name.hasSuffix(".js") {
                #expect(!text.contains("innerHTML") && !text.contains("eval("), "\(name) parses text as code or HTML")
            }
        }
    }

    @Test("serve's console directory must exist and hold index.html; the error says which and how to fix it")
    func badDirectory() throws {
        #expect(throws: GatewayConfigurationError.self) { try ConsoleFiles.load(directory: "/nonexistent/web") }
        do {
            _ = try ConsoleFiles.load(directory: "\(Repository.root)/migrations")
            Issue.record("a directory without index.html was accepted")
        } catch {
            #expect(error.message.contains("has no index.html"), "\(error.message)")
            #expect(error.message.contains("--web-dir"))
        }
    }

    @Test("recordTypes lists the container's record types and their fields' types, without the index-only system fields")
    func recordTypes() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test { client in
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Fasting\") { zoneName } }", token: harness.aliceToken)
            _ = try await save(client, token: harness.aliceToken, [fast("one", hours: 16, end: 1_700_000_000_000)])
            let types = try await client.call("recordTypes", "{ recordTypes { name fields { name type } } }", token: harness.bobToken)
            let fast = try #require(types.list.first { $0["name"] as? String == "Fast" }, "\(types.body)")
            let fields = (fast["fields"] as? [[String: Any]] ?? []).map { "\($0["name"] ?? ""):\($0["type"] ?? "")" }
            #expect(fields == ["endDate:TIMESTAMP", "hours:INT64", "note:STRING"], "every user reads the schema, as in CloudKit: \(fields)")
        }
    }
}
