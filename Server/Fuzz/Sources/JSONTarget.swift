import CanopyPlanner

/// The JSON reader every request body goes through (`JSONValue(parsing:)`):
/// what it accepts, written out and read again, writes out the same.
struct JSONTarget: FuzzTarget {
    static let name = "json"

    func run(_ bytes: UnsafeRawBufferPointer) {
        guard let value = try? JSONValue(parsing: bytes) else { return }
        let written = value.jsonText
        let again: JSONValue
        do {
            again = try JSONValue(parsing: written)
        } catch {
            fatalError("property failed: written JSON does not parse (\(error)): \(written)")
        }
        require(again.jsonText == written, "writing is not stable: \(written) then \(again.jsonText)")
    }
}
