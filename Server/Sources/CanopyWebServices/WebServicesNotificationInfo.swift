import CanopyPlanner

/// A subscription's Notification Info Dictionary, read from a request:
/// the reference's keys and the later ones of CloudKit's
/// `CKSubscription.NotificationInfo`, each of its type. Kept as given and
/// answered back; an unknown key or a wrong type is refused naming where.
public enum WebServicesNotificationInfo {
    /// Keys whose value is a string.
    public static let textKeys: Set<String> = [
        "alertBody", "alertLocalizationKey", "alertActionLocalizationKey", "alertLaunchImage", "soundName",
        "title", "titleLocalizationKey", "subtitle", "subtitleLocalizationKey", "category", "collapseIDKey",
    ]
    /// Keys whose value is a list of strings.
    public static let listKeys: Set<String> = ["alertLocalizationArgs", "titleLocalizationArgs", "subtitleLocalizationArgs", "desiredKeys"]
    /// Keys whose value is a boolean.
    public static let flagKeys: Set<String> = ["shouldBadge", "shouldSendContentAvailable", "shouldSendMutableContent"]
    /// The most bytes the dictionary takes as JSON text (the database's bound too).
    public static let maximumBytes = 4096

    /// The dictionary at `place`, checked; nil when absent or null.
    public static func read(_ value: JSONValue?, at place: String) throws(QueryError) -> JSONValue? {
        guard let value, !value.isNull else { return nil }
        guard case .object(let info) = value else {
            throw QueryError(.badRequest, "\(place) must be a dictionary, not \(value.typeName)")
        }
        for (key, item) in info.sorted(by: { $0.key < $1.key }) {
            let where_ = "\(place).\(key.prefix(60))"
            if textKeys.contains(key) {
                guard case .string = item else { throw QueryError(.badRequest, "\(where_) must be a string") }
            } else if listKeys.contains(key) {
                guard case .array(let items) = item, items.allSatisfy({ if case .string = $0 { true } else { false } }) else {
                    throw QueryError(.badRequest, "\(where_) must be a list of strings")
                }
            } else if flagKeys.contains(key) {
                guard case .bool = item else { throw QueryError(.badRequest, "\(where_) must be true or false") }
            } else {
                let known = (textKeys.union(listKeys).union(flagKeys)).sorted().joined(separator: ", ")
                throw QueryError(.badRequest, "\(place) has no key \(key.prefix(60)); its keys are \(known)")
            }
        }
        guard value.jsonText.utf8.count <= maximumBytes else {
            throw QueryError(.badRequest, "\(place) is \(value.jsonText.utf8.count) bytes as JSON; at most \(maximumBytes)")
        }
        return value
    }
}
