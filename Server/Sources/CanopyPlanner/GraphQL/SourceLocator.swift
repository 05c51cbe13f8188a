/// Turns GraphQLSwift's UTF-8 offsets into the line and column a person sees
/// (GraphQLSwift's own columns are off after non-ASCII text). The line is
/// found by a binary search of the lines' starts, read once (issue 64: each
/// error once scanned the document from its start, so many errors in a
/// long document cost its length squared); the column counts characters
/// from the line's start.
public struct SourceLocator: Sendable {
    let utf8: [UInt8]
    /// The offset where each line starts, in order (the first is 0).
    let lineStarts: [Int]

    public init(_ source: String) {
        utf8 = Array(source.utf8)
        var starts = [0]
        for (index, byte) in utf8.enumerated() where byte == UInt8(ascii: "\n") {
            starts.append(index + 1)
        }
        lineStarts = starts
    }

    public func location(ofUTF8Offset offset: Int) -> QueryError.Location {
        let end = min(max(offset, 0), utf8.count)
        // The last line start at or before `end`.
        var low = 0
        var high = lineStarts.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if lineStarts[middle] <= end { low = middle } else { high = middle - 1 }
        }
        let lineStart = lineStarts[low]
        // Count characters, not bytes, from the start of the line.
        let column = String(decoding: utf8[lineStart..<end], as: UTF8.self).count + 1
        return QueryError.Location(line: low + 1, column: column)
    }
}
