import CanopyAdmin
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `canopy serve` on a Citus coordinator, as a developer runs it after
/// `canopy cluster start --citus` (issue 67): it sees the `citus`
/// extension, says so, and its requests act for their caller through
/// `canopy.act_as`.
@Suite("Citus: canopy serve", .serialized, .enabled(if: CanopyBinary.exists, "build the canopy executable first (swift build)"))
struct CitusServeTests {
    @Test("serve migrates a Citus database, says it is one, answers a token's reads and writes, and stops on SIGTERM")
    func serve() async throws {
        let endpoint = try await TestDatabase.shared.citusDatabase()
        let port = try EmbeddedCluster.freePort()
        let started = try CanopyBinary.serve(databaseURL: endpoint.url, port: port)
        let ready = try await CanopyBinary.waitUntilServing(port: port)
        #expect(ready, "the server answered /health")
        let add = try CanopyBinary.run(["users", "add", "carol", "--json", "--database-url", endpoint.url])
        #expect(add.succeeded, "\(add.output)")
        let token = try #require(add.output.split(separator: "\"").firstIndex(of: "token").map { add.output.split(separator: "\"")[$0 + 2] })
        let answers = try Subprocess.start("/usr/bin/env", ["python3", "-c", """
            import json, urllib.request
            def ask(query):
                request = urllib.request.Request('http://127.0.0.1:\(port)/graphql',
                    data=json.dumps({'query': query}).encode(),
                    headers={'Authorization': 'Bearer \(token)', 'Content-Type': 'application/json'})
                return json.load(urllib.request.urlopen(request))['data']
            print(ask('{ me { name } }')['me']['name'])
            print(ask('mutation { saveZone(zoneName: "Notes") { zoneName } }')['saveZone']['zoneName'])
            print(sorted(z['zoneName'] for z in ask('{ zones(scope: PRIVATE) { zoneName } }')['zones']))
            """]).wait()
        let lines = answers.output.split(separator: "\n").map(String.init)
        #expect(lines == ["carol", "Notes", "['Notes', '_defaultZone']"], "\(answers.output)")

        kill(started.pid, SIGTERM)
        let result = try started.wait()
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("the database is a Citus coordinator"), "\(result.output)")
    }

    /// Some of the gateway's answers still fail on distributed tables
    /// (DECISIONS 174): it refuses them at start, in words, rather than
    /// failing those requests (DECISIONS 161).
    @Test("serve refuses a database whose tables are distributed, saying why")
    func refusesDistributed() async throws {
        let endpoint = try await TestDatabase.shared.migratedCitusDatabase()
        try await TestDatabase.withConnection(endpoint) { connection in
            try await CitusDistribution.distribute(connection, logger: TestDatabase.logger)
        }
        let port = try EmbeddedCluster.freePort()
        let result = try CanopyBinary.serve(databaseURL: endpoint.url, port: port).wait()
        #expect(result.status != 0)
        #expect(result.output.contains("does not serve") && result.output.contains("--distribute"), "\(result.output)")
    }
}
