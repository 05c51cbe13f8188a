import CanopyPlanner

/// A Web Services answer's JSON object, as text. Most endpoints build a
/// dictionary and write it; the ones that answer records (`records/query`,
/// `records/lookup`, `records/modify`, the change feeds) put the plan's
/// text, which PostgreSQL wrote in CloudKit's shape, inside the envelope:
/// no dictionary per record, field and stamp (W9, W10 in `make bench`).
struct WebServicesBody: Sendable {
    var text: String

    init(_ dictionary: [String: JSONValue]) {
        text = JSONValue.object(dictionary).jsonText
    }

    init(text: String) {
        self.text = text
    }
}
