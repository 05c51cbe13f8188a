/// The naming rules of docs/API.md §1 and §4, checked before anything reaches
/// the database so that errors name the argument. Checked byte by byte
/// (every request checks a zone name; a regular expression here was 4% of
/// a lookup's CPU).
public enum Names {
    /// `^[A-Za-z0-9.-][A-Za-z0-9_.-]{0,254}$`, or `_defaultZone`.
    public static func isZoneName(_ name: String) -> Bool {
        if name == "_defaultZone" { return true }
        let bytes = name.utf8
        guard let first = bytes.first, bytes.count <= 255, isLetterOrDigit(first) || first == UInt8(ascii: ".") || first == UInt8(ascii: "-") else {
            return false
        }
        return bytes.allSatisfy { isLetterOrDigit($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") }
    }

    /// `^[A-Za-z][A-Za-z0-9_]{0,254}$`.
    public static func isRecordType(_ name: String) -> Bool {
        isIdentifier(name)
    }

    /// `^[A-Za-z][A-Za-z0-9_]{0,254}$`.
    public static func isFieldName(_ name: String) -> Bool {
        isIdentifier(name)
    }

    /// 1–255 characters as PostgreSQL counts them (`char_length`, code
    /// points; the `records_name_length` check), not as Swift does
    /// (graphemes: one letter with 6,000 combining marks is one `Character`
    /// and 6,001 code points), and no U+0000, which no text column holds.
    public static func isRecordName(_ name: String) -> Bool {
        let scalars = name.unicodeScalars
        var count = 0
        for scalar in scalars {
            count += 1
            if count > 255 || scalar.value == 0 { return false }
        }
        return count >= 1
    }

    static func isIdentifier(_ name: String) -> Bool {
        let bytes = name.utf8
        guard let first = bytes.first, bytes.count <= 255, isLetter(first) else { return false }
        return bytes.allSatisfy { isLetterOrDigit($0) || $0 == UInt8(ascii: "_") }
    }

    static func isLetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
    }

    static func isLetterOrDigit(_ byte: UInt8) -> Bool {
        isLetter(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }
}
