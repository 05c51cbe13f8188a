import CanopyOutbound
import CanopyPlanner
import HTTPTypes
import Hummingbird
import NIOCore

/// What a request without a token may do (docs/API.md §15): read the public
/// database (`lookup`, `records` and `zoneChanges` with `scope: PUBLIC`)
/// and nothing else, at a rate per client address and within a cost limit
/// of its own. Row-level security decides what it reads, as nobody
/// (`canopy.current_user_id()` NULL): the grants to `_world`.
struct AnonymousAccess: Sendable {
    static let forwardedFor = HTTPField.Name("X-Forwarded-For")!

    let limits: AbuseLimits
    private let requests: TokenBuckets<String>
    /// Refused credentials per address (issue 64): each costs the address
    /// one request of the anonymous rate, and an address out of them is
    /// refused 429 before its next credential is looked up.
    private let refusals: TokenBuckets<String>

    init(_ limits: AbuseLimits) {
        self.limits = limits
        requests = TokenBuckets(rate: limits.anonymousRequestsPerSecond, burst: limits.anonymousBurst)
        refusals = TokenBuckets(rate: limits.anonymousRequestsPerSecond, burst: limits.anonymousBurst)
    }

    /// Refuses 429, before any lookup, a credential from an address whose
    /// refused credentials have used up the anonymous rate.
    func checkCredentialAllowance(of address: String) throws {
        guard let wait = refusals.wait(for: address) else { return }
        throw Self.tooMany("refused credentials", wait: wait, limits: limits)
    }

    /// One refused credential from `address`: taken from its allowance.
    func noteRefusedCredential(from address: String) {
        _ = refusals.take(for: address)
    }

    static func tooMany(_ what: String, wait: Duration, limits: AbuseLimits) -> APIError {
        var error = APIError(.limitExceeded, "more than \(UserLimits.requests(limits.anonymousRequestsPerSecond)) a second (burst \(limits.anonymousBurst)) \(what) from this address; slow down, or sign in",
                             status: .tooManyRequests)
        error.retryAfter = max(1, Int(wait.inSeconds.rounded(.up)))
        return error
    }

    /// Whether `field` may run without a token (``AnonymousFields``).
    static func allows(_ field: SelectedField, in request: ParsedRequest) -> Bool {
        AnonymousFields.allows(field, in: request)
    }

    /// The refusal of a field that needs a caller.
    static func refusal(of field: SelectedField) -> APIError {
        APIError(.notAuthenticated, "\(field.name) needs a caller: send Authorization: Bearer <token>; without one only the public database's reads (lookup, records and zoneChanges with scope PUBLIC) are open")
    }

    /// Who is asking, as far as the rate goes: the connection's peer, or
    /// with `--trust-proxy-header` the last address of `X-Forwarded-For`
    /// (the one the proxy in front appended; earlier ones are the client's
    /// say and could be anything). An IPv6 address counts by its /64, the
    /// block one client is usually given, so a client cannot take a bucket
    /// per address of its own network.
    func clientAddress(of request: Request, channel: any Channel) -> String {
        if limits.trustsProxyHeader, let header = request.headers[values: Self.forwardedFor].last,
           let last = header.split(separator: ",").last?.trimmingCharacters(in: .whitespaces), !last.isEmpty {
            return Self.bucket(of: last)
        }
        return Self.bucket(of: channel.remoteAddress?.ipAddress ?? "unknown")
    }

    /// The bucket's key for an address: IPv4 as it is, IPv6 as its /64
    /// (an IPv4-mapped IPv6 address as its IPv4), anything else as given.
    static func bucket(of address: String) -> String {
        // Only an IPv6 address has a colon: anything else (IPv4, which is
        // most of them, or no address) is its own bucket, without parsing
        // (1 % of W1's gateway CPU was parsing the IPv4 caller of every
        // request; issue 69, item 3).
        guard address.utf8.contains(UInt8(ascii: ":")) else { return address }
        guard let parsed = IPAddress(address), !parsed.isIPv4 else { return address }
        let bytes = parsed.bytes
        if bytes.prefix(10).allSatisfy({ $0 == 0 }) && bytes[10] == 0xff && bytes[11] == 0xff {
            return bytes.suffix(4).map(String.init).joined(separator: ".")
        }
        return (IPAddress(bytes: Array(bytes.prefix(8)) + Array(repeating: 0, count: 8))?.description ?? address) + "/64"
    }

    /// Takes one request from `address`'s bucket, or throws 429 LIMIT_EXCEEDED.
    func takeRequest(from address: String) throws {
        guard let wait = requests.take(for: address) else { return }
        throw Self.tooMany("without a token", wait: wait, limits: limits)
    }
}
