import CanopyEncoding
import CanopyWAL
import HTTPTypes
import Hummingbird

extension HTTPField.Name {
    /// A WAL position (`16/B374D848`): in a response, what this client has
    /// seen or written; sent back in a request, reads come only from a
    /// replica that has replayed it (docs/API.md §13, docs/DEPLOYMENT.md).
    static let canopyPosition = Self("Canopy-Position")!
}

extension Request {
    /// The `Canopy-Position` the client sent back; nil when absent or not a
    /// position (it only ever makes reads wait or go to the primary).
    var canopyPosition: WALPosition? {
        headers[.canopyPosition].flatMap { WALPosition($0.trimmingCharacters(in: .whitespaces)) }
            .flatMap { $0.value == .max ? nil : $0 }
    }
}
