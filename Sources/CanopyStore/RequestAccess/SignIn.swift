/// What a verified identity-provider token tells the database: who the
/// person is there (issuer, subject), what to call them, and the addresses
/// the provider vouched for (only verified ones; nil otherwise).
public struct SignIn: Sendable, Hashable {
    public var issuer: String
    public var subject: String
    /// The provider's name in the auth configuration (the new user's handle starts with it).
    public var provider: String
    public var displayName: String?
    public var email: String?
    public var phone: String?

    public init(issuer: String, subject: String, provider: String, displayName: String?, email: String?, phone: String?) {
        self.issuer = issuer
        self.subject = subject
        self.provider = provider
        self.displayName = displayName
        self.email = email
        self.phone = phone
    }
}

/// Sign-ins already written to the database, for a minute: a person's
/// requests need no round trip to find their user until their claims
/// change (a changed name or address is a different key, so it is written).
actor SignInCache {
    private var entries: [SignIn: (userID: Int64, expires: ContinuousClock.Instant)] = [:]
    let timeToLive: Duration

    init(timeToLive: Duration) {
        self.timeToLive = timeToLive
    }

    func lookup(_ signIn: SignIn) -> Int64? {
        guard let entry = entries[signIn], entry.expires > .now else { return nil }
        return entry.userID
    }

    func store(_ signIn: SignIn, userID: Int64) {
        if entries.count > 10_000 { entries.removeAll() }
        entries[signIn] = (userID, .now + timeToLive)
    }
}
