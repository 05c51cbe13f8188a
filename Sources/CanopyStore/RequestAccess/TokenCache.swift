/// Recently looked-up tokens (selector → user and stored hash) for a few
/// seconds, so most requests need no round trip to authenticate. The hash is
/// still compared on every request; a deleted token stops working within
/// the time to live.
actor TokenCache {
    struct Entry {
        var userID: Int64
        var hash: [UInt8]
        var expires: ContinuousClock.Instant
    }

    let timeToLive: Duration
    private var entries: [String: Entry] = [:]

    init(timeToLive: Duration) {
        self.timeToLive = timeToLive
    }

    func lookup(_ selector: String) -> (userID: Int64, hash: [UInt8])? {
        guard let entry = entries[selector] else { return nil }
        guard entry.expires > .now else {
            entries[selector] = nil
            return nil
        }
        return (entry.userID, entry.hash)
    }

    func store(_ selector: String, userID: Int64, hash: [UInt8]) {
        if entries.count > 10_000 { entries.removeAll() }
        entries[selector] = Entry(userID: userID, hash: hash, expires: .now + timeToLive)
    }
}
