/// Turns GraphQLSwift's UTF-8 offsets into the line and column a person sees
/// (GraphQLSwift's own columns are off after non-ASCII text).
public struct SourceLocator: Sendable {
    let utf8: [UInt8]

    public init(_ source: String) {
        utf8 = Array(source.utf8)
    }

    public func location(ofUTF8Offset offset: Int) -> QueryError.Location {
        let end = min(max(offset, 0), utf8.count)
        var line = 1
        var lineStart = 0
        for index in 0..<end where utf8[index] == UInt8(ascii: "\n") {
            line += 1
            lineStart = index + 1
        }
        // Count characters, not bytes, from the start of the line.
        let column = String(decoding: utf8[lineStart..<end], as: UTF8.self).count + 1
        return QueryError.Location(line: line, column: column)
    }
}
