import Foundation

/// Who a verified token says the caller is, with only what Canopy uses.
/// `email` and `phone` are set only when the provider marked them verified
/// (they are what share invitations match), as the token spells them: the
/// gateway puts them in the stored form (`ContactForm`) before sign-in.
public struct VerifiedIdentity: Sendable, Hashable {
    public let provider: String
    public let issuer: String
    public let subject: String
    /// The person's name (`name`, else `given_name family_name`), at most 255 characters.
    public let name: String?
    /// Only when `email_verified` is true (or Apple's `"true"`).
    public let email: String?
    /// Only when `phone_number_verified` is true.
    public let phone: String?
    /// The token's `exp`.
    public let expires: Date
}
