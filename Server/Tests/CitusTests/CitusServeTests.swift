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

    /// `canopy serve` on distributed tables (DECISIONS 184; before it, it
    /// refused them): two people share a zone by URL over HTTP, each row on
    /// its owner's shard on a worker.
    @Test("serve answers a database whose tables are distributed: a zone shared by URL, accepted, read and written by the participant, each row on a worker")
    func servesDistributed() async throws {
        let endpoint = try await TestDatabase.shared.migratedCitusDatabase()
        try await TestDatabase.withConnection(endpoint) { connection in
            try await CitusDistribution.distribute(connection, logger: TestDatabase.logger)
        }
        let port = try EmbeddedCluster.freePort()
        let started = try CanopyBinary.serve(databaseURL: endpoint.url, port: port)
        let ready = try await CanopyBinary.waitUntilServing(port: port)
        #expect(ready, "the server answered /health")
        var people: [(name: String, token: String)] = []
        for name in ["alice", "bob"] {
            let add = try CanopyBinary.run(["users", "add", name, "--json", "--database-url", endpoint.url])
            #expect(add.succeeded, "\(add.output)")
            let object = try JSONSerialization.jsonObject(with: Data(add.output.utf8)) as? [String: Any]
            people.append((try #require(object?["userRecordName"] as? String), try #require(object?["token"] as? String)))
        }
        let answers = try Subprocess.start("/usr/bin/env", ["python3", "-c", """
            import json, sys, urllib.request
            def ask(token, query, variables=None):
                request = urllib.request.Request('http://127.0.0.1:\(port)/graphql',
                    data=json.dumps({'query': query, 'variables': variables or {}}).encode(),
                    headers={'Authorization': 'Bearer ' + token, 'Content-Type': 'application/json'})
                answer = json.load(urllib.request.urlopen(request))
                if answer.get('errors'):
                    sys.exit('refused: %s' % answer['errors'])
                return answer['data']
            alice, bob = '\(people[0].token)', '\(people[1].token)'
            save = 'mutation($s: [RecordInput!]) { modifyRecords(scope: %s, zone: %s, save: $s) { saved { recordName } errors { code message } } }'
            ask(alice, 'mutation { saveZone(zoneName: "Family") { zoneName } }')
            print(ask(alice, save % ('PRIVATE', '{zoneName: "Family"}'), {'s': [{'recordName': 'milk', 'recordType': 'Item', 'fields': {'title': 'milk'}}]})['modifyRecords'])
            url = ask(alice, 'mutation { saveShare(zoneName: "Family", participants: [{userRecordName: "\(people[1].name)", permission: READ_WRITE}]) { url } }')['saveShare']['url']
            print(ask(bob, 'mutation($u: String!) { acceptShare(url: $u) { status } }', {'u': url})['acceptShare']['status'])
            shared = '{zoneName: "Family", ownerName: "\(people[0].name)"}'
            print(ask(bob, save % ('SHARED', shared), {'s': [{'recordName': 'eggs', 'recordType': 'Item', 'fields': {'title': 'eggs'}}]})['modifyRecords'])
            print(sorted(r['recordName'] for r in ask(bob, '{ records(scope: SHARED, zone: %s, recordType: "Item") { records { recordName } } }' % shared)['records']['records']))
            print(sorted(r['recordName'] for r in ask(alice, '{ records(scope: PRIVATE, zone: {zoneName: "Family"}, recordType: "Item") { records { recordName } } }')['records']['records']))
            """]).wait()
        let lines = answers.output.split(separator: "\n").map(String.init)
        #expect(lines == [
            "{'saved': [{'recordName': 'milk'}], 'errors': []}", "ACCEPTED",
            "{'saved': [{'recordName': 'eggs'}], 'errors': []}", "['eggs', 'milk']", "['eggs', 'milk']",
        ], "\(answers.output)")
        // The records are on the workers, by their owner's shard: none is
        // kept on the coordinator (group 0).
        let groups = try await TestDatabase.withConnection(endpoint) { connection in
            try await connection.texts("""
                SELECT DISTINCT p.groupid::text FROM canopy.records r
                  JOIN pg_dist_placement p ON p.shardid = get_shard_id_for_distribution_column('canopy.records', r.owner_id)
                 WHERE r.record_name IN ('milk', 'eggs')
                """)
        }
        #expect(groups.count == 1 && groups.first != "0", "alice's records on one worker: groups \(groups)")

        kill(started.pid, SIGTERM)
        let result = try started.wait()
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("distributed"), "serve says the tables are distributed: \(result.output)")
    }
}
