@testable import CanopyGatewayTestSupport
import CanopyKit
import CanopyTestSupport
import Foundation
import Testing

/// `container.publicCloudDatabase` against a live `canopy serve` (docs/API.md
/// §15): a signed-in user saves, anyone reads without a token (what the
/// record type grants to `_world`; here CloudKit's defaults), and what
/// needs a caller or another zone is refused as CloudKit refuses it.
@Suite("CanopyKit: the public database", .enabled(if: CanopyBinary.exists, "build the canopy executable first (swift build)"))
struct CanopyKitPublicDatabaseTests {
    @Test("save signed in; fetch, query and follow changes without a token; writes by others or by nobody refused; a query subscription; no zones of its own")
    func publicDatabase() async throws {
        let server = try await LiveServer.start()
        let alice = try server.user("alice")
        let bob = try server.user("bob")
        let anyone = Container(baseURL: server.baseURL)
        let database = alice.container.publicCloudDatabase

        let recipes = (1...3).map { index -> Record in
            let recipe = Record(recordType: "Recipe", recordID: Record.ID(recordName: "recipe-\(index)"))
            recipe["title"] = "Soup \(index)"
            recipe["minutes"] = 10 * index
            return recipe
        }
        let (saved, _) = try await database.modifyRecords(saving: recipes, deleting: [])
        #expect(saved.values.allSatisfy { (try? $0.get()) != nil }, "\(saved)")

        let fetched = try await anyone.publicCloudDatabase.record(for: Record.ID(recordName: "recipe-2"))
        #expect(fetched["title"] as? String == "Soup 2" && fetched.creatorUserRecordName == alice.userRecordName)
        #expect(fetched.recordID.zoneID == .default)

        var query = Query(recordType: "Recipe", predicate: Predicate(format: "minutes >= %@", 20))
        query.sortDescriptors = [Query.SortDescriptor(key: "minutes", ascending: false)]
        let page = try await anyone.publicCloudDatabase.records(matching: query)
        #expect(page.matchResults.map(\.0.recordName) == ["recipe-3", "recipe-2"])

        let changes = try await anyone.publicCloudDatabase.recordZoneChanges(inZoneWith: .default, since: nil)
        #expect(Set(changes.modifications.map(\.recordID.recordName)) == ["recipe-1", "recipe-2", "recipe-3"])

        // Nobody writes without signing in; another user may not change alice's record (WRITE is _creator's).
        let stranger = Record(recordType: "Recipe", recordID: Record.ID(recordName: "anon"))
        await #expect { try await anyone.publicCloudDatabase.save(stranger) } throws: { ($0 as? CanopyError)?.code == .notAuthenticated }
        fetched["title"] = "Bob's soup"
        await #expect { try await bob.container.publicCloudDatabase.save(fetched) } throws: { ($0 as? CanopyError)?.code == .permissionFailure }
        try await database.deleteRecord(withID: Record.ID(recordName: "recipe-1"))
        await #expect { try await anyone.publicCloudDatabase.record(for: Record.ID(recordName: "recipe-1")) } throws: { ($0 as? CanopyError)?.code == .unknownItem }

        // A query subscription on the public database (DATABASE ones are refused there, as in CloudKit).
        let watching = try await bob.container.publicCloudDatabase.save(
            Subscription.query(recordType: "Recipe", predicate: Predicate(format: "minutes < %@", 15), subscriptionID: "quick-recipes", options: [.firesOnRecordCreation]))
        #expect(watching.subscriptionID == "quick-recipes")
        #expect(try await bob.container.publicCloudDatabase.allSubscriptions().map(\.subscriptionID) == ["quick-recipes"])
        await #expect { try await bob.container.publicCloudDatabase.save(Subscription.database(subscriptionID: "all")) } throws: { ($0 as? CanopyError)?.code == .badDatabase }

        await #expect { try await database.save(RecordZone(zoneName: "Kitchen")) } throws: { ($0 as? CanopyError)?.code == .badDatabase }
        await #expect { _ = try await database.allRecordZones() } throws: { ($0 as? CanopyError)?.code == .badDatabase }
        await #expect { _ = try await anyone.privateCloudDatabase.allRecordZones() } throws: { ($0 as? CanopyError)?.code == .notAuthenticated }
    }
}
