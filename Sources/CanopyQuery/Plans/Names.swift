/// The naming rules of API.md §1 and §4, checked before anything reaches
/// the database so that errors name the argument.
public enum Names {
    public static func isZoneName(_ name: String) -> Bool {
        name == "_defaultZone" || name.range(of: "^[A-Za-z0-9.-][A-Za-z0-9_.-]{0,254}$", options: .regularExpression) != nil
    }

    public static func isRecordType(_ name: String) -> Bool {
        name.range(of: "^[A-Za-z][A-Za-z0-9_]{0,254}$", options: .regularExpression) != nil
    }

    public static func isFieldName(_ name: String) -> Bool {
        name.range(of: "^[A-Za-z][A-Za-z0-9_]{0,254}$", options: .regularExpression) != nil
    }

    public static func isRecordName(_ name: String) -> Bool {
        (1...255).contains(name.count)
    }
}
