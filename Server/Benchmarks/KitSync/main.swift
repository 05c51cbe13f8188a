// `make bench`'s CanopyKit first sync (issue 51): one process syncs a whole
// zone from the release gateway through CanopyKit's SyncEngine (records
// decoded into Records and handed to a delegate that counts them), with
// `firstSyncRanges` ranges at once (1: one chain of pages). Prints one JSON
// line: {mode, records, seconds, rate, peakRSSMB}.
//   canopykit-sync BASE_URL TOKEN ZONE RANGES
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
guard arguments.count == 5, let baseURL = URL(string: arguments[1]), let ranges = Int(arguments[4]) else {
    FileHandle.standardError.write(Data("usage: canopykit-sync BASE_URL TOKEN ZONE RANGES\n".utf8))
    exit(2)
}
let token = arguments[2], zoneName = arguments[3]
let configuration = URLSessionConfiguration.ephemeral
configuration.httpMaximumConnectionsPerHost = max(ranges, 1)
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
