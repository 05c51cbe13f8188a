import CanopyPlanner

/// A Web Services answer's JSON object, as text. Most endpoints build a
/// dictionary and write it; the ones that answer many records
/// (`records/query`, `records/lookup`, the change feeds) write their
/// records straight into the text (``WebServicesRecordText``), without a
/// dictionary per record, field and stamp: the envelope's cost is what
/// `make bench` holds against the GraphQL twin (W9, W10).
struct WebServicesBody: Sendable {
    var text: String

    init(_ dictionary: [String: JSONValue]) {
        text = JSONValue.object(dictionary).jsonText
    }

    init(text: String) {
        self.text = text
    }
}
