import Foundation
import HTTPTypes
import Hummingbird

extension HTTPField.Name {
    /// The device a request comes from (a `registerDevice` ID): its own
    /// changes are not pushed back to it (docs/API.md §14, docs/PUSH.md).
    static let canopyDevice = Self("Canopy-Device")!
}

extension Request {
    /// The `Canopy-Device` the client sent, lowercased; nil when absent or
    /// not a device ID. It only ever spares a device of the caller's a push.
    var canopyDevice: String? {
        headers[.canopyDevice].flatMap { UUID(uuidString: $0.trimmingCharacters(in: .whitespaces)) }
            .map { $0.uuidString.lowercased() }
    }
}
