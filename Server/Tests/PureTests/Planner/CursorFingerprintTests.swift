import CanopyPlanner
import Testing

/// A records cursor is signed over a fingerprint of its query, sort keys
/// included. The keys' text was once made by string interpolation
/// (reflection); it is now written out (issue 39), and must be the same
/// text, or every cursor a running app holds stops working on upgrade.
@Suite("Cursor fingerprints")
struct CursorFingerprintTests {
    @Test("each sort target's text is what reflection printed", arguments: [
        CheckedPredicate.Target.field("endDate", .timestamp),
        .field("tags", .list(.string)),
        .field("a_b2", .asset),
        .recordName, .creationDate, .modificationDate, .createdBy, .modifiedBy,
    ])
    func sameAsReflection(_ target: CheckedPredicate.Target) {
        #expect(target.fingerprintText == "\(target)")
    }
}
