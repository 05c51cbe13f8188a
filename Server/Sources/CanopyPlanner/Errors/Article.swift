/// "a STRING", "an INT64": messages name a type with the article its
/// spoken name takes, so they read as sentences.
public enum Article {
    /// `word` after "a" or "an" (by its first letter: a vowel takes "an").
    public static func indefinite(_ word: String) -> String {
        guard let first = word.first?.lowercased() else { return word }
        return ("aeiou".contains(first) ? "an " : "a ") + word
    }
}
