// `make bench`'s CanopyKit first sync (issue 51): one process syncs a whole
// zone from the release gateway through CanopyKit's SyncEngine (records
// decoded into Records and handed to a delegate that counts them), with
// `firstSyncRanges` ranges at once (1: one chain of pages). Prints one JSON
// line: {mode, records, seconds, rate, peakRSSMB}.
//   canopykit-sync BASE_URL TOKEN ZONE RANGES [raw]
// With `raw` (issue 69, the engines' own cost): the same zoneChanges pages
// of 400 read by the same stack without CanopyKit: URLSession and
// JSONSerialization only, one chain (RANGES 1) or `zoneRanges`' ranges at
// once, as js_sync.mjs's raw modes do in Node. The bench reads each run's
// CPU from outside (scripts/bench/js_sync.py).
import CanopyKit
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

actor Counter: SyncEngineDelegate {
    let zoneName: String
    private(set) var records = 0
    init(zoneName: String) { self.zoneName = zoneName }

    func handleEvent(_ event: SyncEngine.Event, syncEngine: SyncEngine) async {
        if case .fetchedRecordZoneChanges(let zoneID, let modifications, _) = event, zoneID.zoneName == zoneName {
            records += modifications.count
        }
    }

    func nextRecordZoneChangeBatch(_ context: SyncEngine.SendChangesContext, syncEngine: SyncEngine) async -> SyncEngine.RecordZoneChangeBatch? { nil }
}

/// The process's peak resident set (VmHWM), in MB.
func peakRSSMB() -> Double {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
          let kilobytes = Double(line.split(separator: " ").dropFirst().first { !$0.isEmpty }.map(String.init) ?? "")
    else { return 0 }
    return kilobytes / 1024
}

let arguments = CommandLine.arguments
guard arguments.count == 5 || (arguments.count == 6 && arguments[5] == "raw"),
      let baseURL = URL(string: arguments[1]), let ranges = Int(arguments[4]) else {
    FileHandle.standardError.write(Data("usage: canopykit-sync BASE_URL TOKEN ZONE RANGES [raw]\n".utf8))
    exit(2)
}
let token = arguments[2], zoneName = arguments[3]
let configuration = URLSessionConfiguration.ephemeral
configuration.httpMaximumConnectionsPerHost = max(ranges, 1)
if arguments.count == 6 {
    let reader = RawPages(endpoint: baseURL.appendingPathComponent("graphql"), token: token, zoneName: zoneName,
                          session: URLSession(configuration: configuration))
    let started = ContinuousClock.now
    let records = try await reader.sync(ranges: ranges)
    let elapsed = ContinuousClock.now - started
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    let result: [String: Any] = ["mode": ranges > 1 ? "kit-raw-ranges" : "kit-raw", "records": records, "seconds": seconds,
                                 "rate": Double(records) / seconds, "peakRSSMB": peakRSSMB()]
    print(String(decoding: try JSONSerialization.data(withJSONObject: result, options: [.sortedKeys]), as: UTF8.self))
    exit(0)
}
let container = Container(baseURL: baseURL, session: URLSession(configuration: configuration)) { _ in token }
let counter = Counter(zoneName: zoneName)
var engineConfiguration = SyncEngine.Configuration(database: container.privateCloudDatabase, stateSerialization: nil,
                                                   delegate: counter, automaticallySync: false)
engineConfiguration.firstSyncRanges = ranges
engineConfiguration.pageSize = 400
let engine = SyncEngine(engineConfiguration)
let started = ContinuousClock.now
try await engine.fetchChanges(inZones: [RecordZone.ID(zoneName: zoneName)])
let elapsed = ContinuousClock.now - started
let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
let records = await counter.records
let result: [String: Any] = ["mode": ranges > 1 ? "kit" : "kit-chain", "records": records, "seconds": seconds,
                             "rate": Double(records) / seconds, "peakRSSMB": peakRSSMB()]
print(String(decoding: try JSONSerialization.data(withJSONObject: result, options: [.sortedKeys]), as: UTF8.self))
withExtendedLifetime(counter) {}

/// Raw mode: zoneChanges pages over URLSession, parsed by JSONSerialization
/// and counted, nothing decoded into CanopyKit's types.
struct RawPages: Sendable {
    struct Refused: Error, CustomStringConvertible {
        let description: String
    }

    static let page = "query($z: ZoneID!, $s: String) { zoneChanges(scope: PRIVATE, zone: $z, since: $s, limit: 400) { changed { recordName recordType zone { zoneName ownerName } fields parent recordChangeTag created { timestamp userRecordName } modified { timestamp userRecordName } share { url } } deleted { recordName recordType } token moreComing } }"
    static let cut = "query($z: ZoneID!, $n: Int) { zoneRanges(scope: PRIVATE, zone: $z, count: $n) { position ranges } }"

    let endpoint: URL
    let token: String
    let zoneName: String
    let session: URLSession

    /// The records of the zone: one chain from nothing, or the ranges at
    /// once and then the tail from the cut's position.
    func sync(ranges: Int) async throws -> Int {
        guard ranges > 1 else { return try await chain(from: nil) }
        let cut = try await post(Self.cut, ["z": ["zoneName": zoneName], "n": ranges])["zoneRanges"] as? [String: Any]
        guard let starts = cut?["ranges"] as? [String], let position = cut?["position"] as? String else {
            throw Refused(description: "zoneRanges answered no ranges: \(String(describing: cut))")
        }
        let inRanges = try await withThrowingTaskGroup(of: Int.self) { group in
            for start in starts { group.addTask { try await chain(from: start) } }
            return try await group.reduce(0, +)
        }
        return inRanges + (try await chain(from: position))
    }

    private func chain(from start: String?) async throws -> Int {
        var since = start, records = 0
        while true {
            var variables: [String: Any] = ["z": ["zoneName": zoneName]]
            if let since { variables["s"] = since }
            guard let page = try await post(Self.page, variables)["zoneChanges"] as? [String: Any],
                  let changed = page["changed"] as? [Any] else {
                throw Refused(description: "zoneChanges answered no page")
            }
            records += changed.count
            since = page["token"] as? String
            if page["moreComing"] as? Bool != true { return records }
        }
    }

    private func post(_ query: String, _ variables: [String: Any]) async throws -> [String: Any] {
        var request = URLRequest(url: endpoint)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        request.httpBody = try JSONSerialization.data(withJSONObject: ["query": query, "variables": variables])
        let (data, _) = try await session.data(for: request)
        guard let answer = try JSONSerialization.jsonObject(with: data) as? [String: Any], let result = answer["data"] as? [String: Any] else {
            throw Refused(description: "the gateway answered: \(String(decoding: data.prefix(300), as: UTF8.self))")
        }
        return result
    }
}
