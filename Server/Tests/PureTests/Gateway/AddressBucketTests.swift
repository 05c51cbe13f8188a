@testable import CanopyGateway
import Testing

/// The key of the rate bucket an address counts against
/// (`AnonymousAccess.bucket(of:)`): IPv4 as it is, IPv6 by its /64, an
/// IPv4-mapped IPv6 address as its IPv4, anything else as given.
@Suite("Rate buckets by address")
struct AddressBucketTests {
    @Test("IPv4 and non-addresses are their own bucket; IPv6 shares its /64; a mapped IPv4 is its IPv4")
    func buckets() {
        #expect(AnonymousAccess.bucket(of: "203.0.113.7") == "203.0.113.7")
        #expect(AnonymousAccess.bucket(of: "127.0.0.1") == "127.0.0.1")
        #expect(AnonymousAccess.bucket(of: "unknown") == "unknown")
        #expect(AnonymousAccess.bucket(of: "") == "")
        #expect(AnonymousAccess.bucket(of: "2001:db8:1:2:3:4:5:6") == AnonymousAccess.bucket(of: "2001:db8:1:2:ffff::1"))
        #expect(AnonymousAccess.bucket(of: "2001:db8:1:2:3:4:5:6").hasSuffix("/64"))
        #expect(AnonymousAccess.bucket(of: "2001:db8:1:2::1") != AnonymousAccess.bucket(of: "2001:db8:1:3::1"))
        #expect(AnonymousAccess.bucket(of: "::ffff:198.51.100.9") == "198.51.100.9")
        #expect(AnonymousAccess.bucket(of: "not:an:address") == "not:an:address")
    }
}
