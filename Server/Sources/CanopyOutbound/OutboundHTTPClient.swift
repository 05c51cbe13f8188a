import AsyncHTTPClient
import NIOCore
import Synchronization

/// An HTTP client for user-supplied URLs: each request's URL passes the
/// `OutboundPolicy` first, then goes out on a client whose connections are
/// pinned to the checked address (async-http-client's `dnsOverride`, which
/// keeps the name for TLS's SNI and certificate check). A client per
/// pinned name and address keeps connections reused while the name stays
/// put; the least recently used is closed past `capacity`. Redirects are
/// never followed.
public final class OutboundHTTPClient: Sendable {
    public let policy: OutboundPolicy
    private let configuration: HTTPClient.Configuration
    private let direct: HTTPClient
    private let pinned = Mutex<PinnedClients>(PinnedClients())
    let capacity: Int

    private struct PinKey: Hashable {
        var host: String
        var address: IPAddress
    }

    private struct Pinned {
        var client: HTTPClient
        var lastUsed: UInt64
    }

    /// The pinned clients and a use counter, under one lock.
    private struct PinnedClients {
        var clients: [PinKey: Pinned] = [:]
        var uses: UInt64 = 0
    }

    public init(policy: OutboundPolicy, configuration: HTTPClient.Configuration, capacity: Int = 64) {
        var configuration = configuration
        configuration.redirectConfiguration = .disallow
        configuration.dnsOverride = [:]
        self.policy = policy
        self.configuration = configuration
        self.capacity = capacity
        direct = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// Checks the request's URL and sends it; throws `OutboundError` when
    /// the URL may not be called (before any connection is attempted).
    public func execute(_ request: HTTPClientRequest, timeout: Duration) async throws -> HTTPClientResponse {
        let destination = try await policy.destination(for: request.url)
        try policy.beforeConnecting?(destination)
        return try await client(for: destination).execute(request, timeout: TimeAmount(timeout))
    }

    private func client(for destination: OutboundDestination) -> HTTPClient {
        guard let address = destination.pinnedAddress else { return direct }
        let key = PinKey(host: destination.requestHost, address: address)
        var evicted: HTTPClient?
        let client = pinned.withLock { state -> HTTPClient in
            state.uses += 1
            let now = state.uses
            if var entry = state.clients[key] {
                entry.lastUsed = now
                state.clients[key] = entry
                return entry.client
            }
            var configuration = self.configuration
            configuration.dnsOverride = [destination.requestHost: "\(address)"]
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            if state.clients.count >= capacity, let oldest = state.clients.min(by: { $0.value.lastUsed < $1.value.lastUsed }) {
                state.clients[oldest.key] = nil
                evicted = oldest.value.client
            }
            state.clients[key] = Pinned(client: client, lastUsed: now)
            return client
        }
        if let evicted {
            // Requests already on it may still be running: let them finish.
            let grace = configuration.timeout.read ?? .seconds(30)
            Task {
                try? await Task.sleep(for: .nanoseconds(grace.nanoseconds))
                try? await evicted.shutdown()
            }
        }
        return client
    }

    /// Closes every client.
    public func shutdown() async {
        let clients = pinned.withLock { state in
            defer { state.clients.removeAll() }
            return state.clients.values.map(\.client)
        }
        for client in clients { try? await client.shutdown() }
        try? await direct.shutdown()
    }
}
