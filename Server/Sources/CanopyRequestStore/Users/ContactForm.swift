import Foundation

/// The one form of an email address and a phone number that
/// `canopy.users` stores (and its CHECK constraints accept): what share
/// invitations match, whether the address came from `canopy users add` or
/// from an identity provider's token.
public enum ContactForm {
    /// Trimmed and lower case.
    public static func normalizedEmail(_ value: String) -> String {
        value.trimmingCharacters(in: .whitespaces).lowercased()
    }

    /// Spaces, dashes and parentheses dropped.
    public static func normalizedPhone(_ value: String) -> String {
        value.filter { !$0.isWhitespace && $0 != "-" && $0 != "(" && $0 != ")" }
    }

    /// A normalised address `canopy.users.email` accepts: one `@`, no
    /// blanks or control characters, at most 320 bytes.
    public static func isEmail(_ email: String) -> Bool {
        email.utf8.count <= 320
            && !email.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
            && email.range(of: "^[^@\\s]+@[^@\\s]+$", options: .regularExpression) != nil
    }

    /// A normalised number `canopy.users.phone` accepts: 3-20 digits with an optional leading +.
    public static func isPhone(_ phone: String) -> Bool {
        phone.range(of: "^\\+?[0-9]{3,20}$", options: .regularExpression) != nil
    }

    /// The stored form of an address, or nil when it cannot be one.
    public static func email(_ value: String) -> String? {
        let email = normalizedEmail(value)
        return isEmail(email) ? email : nil
    }

    /// The stored form of a number, or nil when it cannot be one.
    public static func phone(_ value: String) -> String? {
        let phone = normalizedPhone(value)
        return isPhone(phone) ? phone : nil
    }
}
