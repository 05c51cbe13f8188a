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
