/// A string as JSON text, escaped as `JSONEncoder` escapes it (`\"`, `\\`,
/// the short escapes, `\u00XX` for other control characters; `/` and
/// everything else as is). Written once for every module that writes JSON
/// by hand: the planner's values, the asset URLs spliced into answers.
public enum JSONString {
    /// `string` in quotes, escaped.
    public static func quoted(_ string: String) -> String {
        var text = ""
        append(string, to: &text)
        return text
    }

    /// Appends `string` in quotes, escaped, to `text`.
    public static func append(_ string: String, to text: inout String) {
        text += "\""
        if !string.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            text += string
        } else {
            for scalar in string.unicodeScalars {
                switch scalar {
                case "\"": text += "\\\""
                case "\\": text += "\\\\"
                case "\n": text += "\\n"
                case "\r": text += "\\r"
                case "\t": text += "\\t"
                case "\u{08}": text += "\\b"
                case "\u{0C}": text += "\\f"
                case let control where control.value < 0x20:
                    let hex = String(control.value, radix: 16)
                    text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                default: text.unicodeScalars.append(scalar)
                }
            }
        }
        text += "\""
    }
}
