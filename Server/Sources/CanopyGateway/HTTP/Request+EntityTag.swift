import Foundation
import HTTPTypes
import Hummingbird

extension Request {
    /// Whether `If-None-Match` (any of its lines, any tag in a list, or
    /// `*`) names `entityTag`: the client's copy is current and the answer
    /// is 304. Shared by the console's files and asset downloads.
    func hasCurrentCopy(of entityTag: String) -> Bool {
        headers[values: .ifNoneMatch].contains { line in
            line.split(separator: ",").contains { candidate in
                let tag = candidate.trimmingCharacters(in: .whitespaces)
                return tag == "*" || tag == entityTag
            }
        }
    }
}
