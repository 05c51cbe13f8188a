@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import PostgresNIO
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// TLS to PostgreSQL as the URL asks (issue 20, part 6), against an
/// embedded cluster of the test's own with certificates made here by
/// openssl: a CA, a server certificate for `localhost` signed by it, and
/// another CA that signed nothing of the server's. What each `sslmode`
/// does is read back from the server (`pg_stat_ssl`), and `canopy serve`
/// keeps its whole pool on TLS from its URL.
@Suite("TLS to PostgreSQL", .serialized, .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"), "needs openssl"))
struct DatabaseTLSTests {
    /// A cluster serving TLS with the made certificates, and where they are.
    struct Served {
        let cluster: EmbeddedCluster
        let port: Int
        let admin: DatabaseEndpoint
        let directory: String
        var ca: String { "\(directory)/ca.pem" }
        var otherCA: String { "\(directory)/other-ca.pem" }

        func url(host: String = "localhost", _ parameters: String) -> String {
            "postgres://canopy_admin:secret@\(host):\(port)/canopy?\(parameters)"
        }
    }

    static func serve(_ body: (Served) async throws -> Void) async throws {
        let directory = "/tmp/canopy-tls-\(UUID().uuidString.prefix(8))"
        let cluster = EmbeddedCluster(dataDirectory: "\(directory)/cluster")
        let running = try await cluster.start(logger: TestDatabase.logger)
        let served = Served(cluster: cluster, port: running.port, admin: running.adminEndpoint, directory: directory)
        do {
            try makeCertificates(in: directory, serverFiles: cluster.pgData)
            try await TestDatabase.withConnection(served.admin) { connection in
                for statement in [
                    "ALTER SYSTEM SET ssl = on", "ALTER SYSTEM SET ssl_cert_file = 'server.pem'",
                    "ALTER SYSTEM SET ssl_key_file = 'server-key.pem'", "ALTER ROLE canopy_admin PASSWORD 'secret'",
                    "SELECT pg_reload_conf()",
                ] {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: TestDatabase.logger)
                }
            }
            try await body(served)
        } catch {
            try? await cluster.stop(logger: TestDatabase.logger)
            throw error
        }
        try await cluster.stop(logger: TestDatabase.logger)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A CA, a server key and certificate for `localhost` signed by it
    /// (copied into the cluster's data directory for the server), and a
    /// second, unrelated CA.
    static func makeCertificates(in directory: String, serverFiles pgData: String) throws {
        let script = """
            set -e
            cd '\(directory)'
            openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj '/CN=Canopy test CA' -keyout ca-key.pem -out ca.pem 2>/dev/null
            openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj '/CN=Another CA' -keyout other-ca-key.pem -out other-ca.pem 2>/dev/null
            openssl req -newkey rsa:2048 -nodes -subj '/CN=localhost' -keyout server-key.pem -out server.csr 2>/dev/null
            printf 'subjectAltName=DNS:localhost\\nbasicConstraints=CA:FALSE\\n' > server.ext
            openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 2 -extfile server.ext -out server.pem 2>/dev/null
            cp server.pem server-key.pem '\(pgData)/'
            chmod 600 '\(pgData)/server-key.pem'
            if [ "$(id -u)" = 0 ]; then chown postgres '\(pgData)/server.pem' '\(pgData)/server-key.pem'; fi
            """
        let result = try Subprocess.start("/bin/sh", ["-c", script]).wait()
        try #require(result.succeeded, "making certificates failed:\n\(result.output)")
    }

    /// Whether the session `url` opens is encrypted, as the server sees it.
    static func encrypted(_ url: String) async throws -> Bool {
        try await TestDatabase.withConnection(try DatabaseEndpoint(url: url)) { connection in
            let rows = try await connection.query("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", logger: TestDatabase.logger)
            for try await ssl in rows.decode(Bool.self) { return ssl }
            return false
        }
    }

    @Test("sslmode disable, prefer, require, verify-ca and verify-full do what libpq's do; a certificate from another CA or for another name is refused")
    func modes() async throws {
        try await Self.serve { (served: Served) async throws in
            #expect(try await Self.encrypted(served.url("sslmode=disable")) == false)
            #expect(try await Self.encrypted(served.url("sslmode=prefer")) == true)
            #expect(try await Self.encrypted(served.url("sslmode=require")) == true, "require encrypts without checking the certificate")
            #expect(try await Self.encrypted(served.url("sslmode=verify-full&sslrootcert=\(served.ca)")) == true)
            #expect(try await Self.encrypted(served.url(host: "127.0.0.1", "sslmode=verify-ca&sslrootcert=\(served.ca)")) == true,
                    "verify-ca checks the chain, not the name")

            // Refusals: a certificate the given CA did not sign, for verify-ca,
            // verify-full, and require given a root (libpq's rule).
            for parameters in ["sslmode=verify-full&sslrootcert=\(served.otherCA)", "sslmode=verify-ca&sslrootcert=\(served.otherCA)",
                               "sslmode=require&sslrootcert=\(served.otherCA)"] {
                await #expect(throws: (any Error).self, "\(parameters) must refuse a certificate signed by another CA") {
                    _ = try await Self.encrypted(served.url(parameters))
                }
            }
            // verify-full checks the name: the certificate is for localhost.
            await #expect(throws: (any Error).self, "verify-full must refuse a certificate for another name") {
                _ = try await Self.encrypted(served.url(host: "127.0.0.1", "sslmode=verify-full&sslrootcert=\(served.ca)"))
            }
            // Without sslrootcert, verify-full uses the system's roots, which
            // never signed this test CA's certificate.
            await #expect(throws: (any Error).self) {
                _ = try await Self.encrypted(served.url("sslmode=verify-full"))
            }
        }
    }

    @Test("a bad sslmode or an unreadable sslrootcert is refused with what was wrong; the CLI says why a TLS connection failed")
    func refusals() async throws {
        #expect(throws: StoreError.self) { try DatabaseEndpoint(url: "postgres://u@localhost/db?sslmode=verify") }
        do {
            _ = try DatabaseEndpoint(url: "postgres://u@localhost/db?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem")
            Issue.record("an unreadable sslrootcert was accepted")
        } catch let error as StoreError {
            #expect(error.message.contains("sslrootcert '/nonexistent/ca.pem' is not a readable file"), "\(error.message)")
        }
        let url = try DatabaseEndpoint(url: "postgres://u:p@db.example.com:5433/app?sslmode=verify-full&sslrootcert=/etc/hostname")
        #expect(url.displayURL == "postgres://u@db.example.com:5433/app?sslmode=verify-full&sslrootcert=/etc/hostname")
        #expect(url.libpqEnvironment["PGSSLROOTCERT"] == "/etc/hostname" && url.libpqEnvironment["PGSSLMODE"] == "verify-full")

        try await Self.serve { (served: Served) async throws in
            guard CanopyBinary.exists else { return }
            let result = try CanopyBinary.run(["migrate", "status", "--database-url", served.url("sslmode=verify-full&sslrootcert=\(served.otherCA)")])
            #expect(!result.succeeded)
            #expect(result.output.lowercased().contains("certificate"), "the CLI names the certificate as the fault: \(result.output)")
        }
    }

    @Test("canopy serve given a verify-full URL runs its whole pool on TLS and answers")
    func gatewayPool() async throws {
        try #require(CanopyBinary.exists, "build the canopy executable first")
        try await Self.serve { (served: Served) async throws in
            let url = served.url("sslmode=verify-full&sslrootcert=\(served.ca)")
            let port = try EmbeddedCluster.freePort()
            let serve = try CanopyBinary.serve(databaseURL: url, port: port, ["--no-console"],
                                               environment: ["CANOPY_GATEWAY_PASSWORD": "gateway-secret"])
            defer { kill(serve.pid, SIGTERM); _ = try? serve.wait() }
            #expect(try await CanopyBinary.waitUntilServing(port: port), "canopy serve did not answer /health")
            let add = try CanopyBinary.run(["users", "add", "tess", "--json", "--database-url", url])
            try #require(add.succeeded, "\(add.output)")
            let token = try #require((try JSONSerialization.jsonObject(with: Data(add.output.split(separator: "\n").last!.utf8)) as? [String: Any])?["token"] as? String)
            let me = try await Subprocess.start("/usr/bin/env", ["python3", "-c", """
                import json, urllib.request
                request = urllib.request.Request('http://127.0.0.1:\(port)/graphql', data=json.dumps({'query': '{ me { name } }'}).encode(),
                    headers={'Authorization': 'Bearer \(token)', 'Content-Type': 'application/json'})
                print(json.load(urllib.request.urlopen(request))['data']['me']['name'])
                """]).exit()
            #expect(me.output.trimmingCharacters(in: .whitespacesAndNewlines) == "tess", "\(me.output)")
            // Every session of the gateway's role is encrypted, and there are some.
            let (encrypted, plain) = try await TestDatabase.withConnection(served.admin) { connection in
                let rows = try await connection.query("""
                    SELECT count(*) FILTER (WHERE s.ssl), count(*) FILTER (WHERE NOT s.ssl)
                    FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) WHERE a.usename = 'canopy_gateway'
                    """, logger: TestDatabase.logger)
                for try await counts in rows.decode((Int64, Int64).self) { return counts }
                return (0, 0)
            }
            #expect(encrypted > 0 && plain == 0, "gateway sessions: \(encrypted) encrypted, \(plain) not")
        }
    }
}
