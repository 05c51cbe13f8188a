import ArgumentParser
import CanopyAdmin
import CanopyRequestStore
import Foundation

/// `canopy serve`'s read replicas (docs/API.md §13, docs/DEPLOYMENT.md): where
/// they are, how long a read waits for one, how far behind one may be.
struct ReplicaOptions: ParsableArguments {
    @Option(name: .customLong("replica-url"), help: ArgumentHelp(
        "A streaming replica that records, lookup and change feeds may read from; repeat for more (env CANOPY_REPLICA_URLS, comma-separated). Its host, port and database are used; the gateway logs in as it does on the primary.",
        valueName: "url"))
    var replicaURLs: [String] = (ProcessInfo.processInfo.environment["CANOPY_REPLICA_URLS"] ?? "")
        .split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }

    @Option(name: .customLong("replica-wait"), help: ArgumentHelp(
        "Milliseconds a read that must see a client's write waits for a replica to replay it before the primary answers (env CANOPY_REPLICA_WAIT_MS; default 100; 0: never wait).",
        valueName: "ms"))
    var waitMilliseconds: Int = Int(ProcessInfo.processInfo.environment["CANOPY_REPLICA_WAIT_MS"] ?? "") ?? 100

    @Option(name: .customLong("replica-max-lag"), help: ArgumentHelp(
        "Seconds a replica may be behind the primary and still take reads; further behind, it is out of rotation until it catches up (env CANOPY_REPLICA_MAX_LAG; default 5).",
        valueName: "seconds"))
    var maximumLagSeconds: Double = Double(ProcessInfo.processInfo.environment["CANOPY_REPLICA_MAX_LAG"] ?? "") ?? 5

    func validate() throws {
        guard waitMilliseconds >= 0 else {
            throw ValidationError("--replica-wait must be 0 or more milliseconds, got \(waitMilliseconds)")
        }
        guard maximumLagSeconds > 0, maximumLagSeconds.isFinite else {
            throw ValidationError("--replica-max-lag must be a positive number of seconds, got \(maximumLagSeconds)")
        }
    }

    var settings: ReplicaSet.Settings {
        ReplicaSet.Settings(wait: .milliseconds(waitMilliseconds), maximumLag: .seconds(maximumLagSeconds))
    }

    /// The replicas, each reached as `gateway` logs in: reads stay under
    /// row-level security whatever user a URL names (an administrator's URL
    /// gives only the place). A URL that names the gateway's role with a
    /// password is used as it is.
    func endpoints(readingAs gateway: DatabaseEndpoint) throws -> [DatabaseEndpoint] {
        try replicaURLs.map { given in
            // `postgres://db2:5432/canopy` names no user: the gateway's, then.
            var url = given
            if let schemeEnd = url.range(of: "://"), !url[schemeEnd.upperBound...].prefix(while: { !"/?#".contains($0) }).contains("@") {
                url.insert(contentsOf: "\(gateway.username)@", at: schemeEnd.upperBound)
            }
            let endpoint: DatabaseEndpoint
            do {
                endpoint = try DatabaseEndpoint(url: url)
            } catch let error as StoreError {
                throw StoreError(.invalidConfiguration, "--replica-url: \(error.message)")
            }
            guard endpoint.otherHosts.isEmpty else {
                throw StoreError(.invalidConfiguration, "--replica-url names one server; repeat it for more (got '\(endpoint.displayURL)')")
            }
            if endpoint.username == gateway.username, endpoint.password != nil { return endpoint }
            return endpoint.asUser(gateway.username, password: gateway.password)
        }
    }
}
