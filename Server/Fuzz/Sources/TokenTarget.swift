import CanopyPlanner
import Foundation

/// Query cursors and change tokens, as clients hand them back: the first
/// byte picks which (even: a cursor, odd: a change token), the rest is the
/// text. Whatever decodes encodes to text that decodes to the same.
struct TokenTarget: FuzzTarget {
    static let name = "tokens"
    static let secret = GraphQLTarget.secret
    static let retiredOnly = SigningKey(Data(repeating: 9, count: 32), retired: [Data(repeating: 7, count: 32)])

    func run(_ bytes: UnsafeRawBufferPointer) {
        guard let first = bytes.first else { return }
        let text = UnsafeRawBufferPointer(rebasing: bytes.dropFirst()).text
        if first % 2 == 0 {
            guard let cursor = Cursor.decode(text, secret: Self.secret, fingerprint: "q1") else { return }
            require(Cursor.decode(cursor.encoded(secret: Self.secret), secret: Self.secret, fingerprint: "q1") == cursor, "a cursor does not survive encoding: \(text)")
        } else {
            // A token from before a restore is recognised, not decoded.
            if ChangeToken.decode(text, secret: Self.secret) != nil {
                require(ChangeToken.wasRetired(text, secret: Self.retiredOnly), "a token of the retired key is not recognised: \(text)")
            }
            _ = ChangeToken.wasRetired(text, secret: Self.secret)
            guard let token = ChangeToken.decode(text, secret: Self.secret) else { return }
            require(ChangeToken.decode(token.encoded(secret: Self.secret), secret: Self.secret) == token, "a change token does not survive encoding: \(text)")
        }
    }

    func generatedSeeds() async throws -> [String: Data] {
        let cursors: [Cursor] = [
            Cursor(fingerprint: "q1", keys: [.int(42), .string("rec-1")]),
            Cursor(fingerprint: "q1", keys: [.double(1.5), .null, .bool(true), .string("ü"), .array([.int(1)])]),
            Cursor(fingerprint: "other", keys: []),
        ]
        let tokens: [ChangeToken] = [
            .zone(.init(user: 1, scope: "PRIVATE", zoneID: 7, zoneName: "Z", after: 100, floor: 90, read: 123_456)),
            .zone(.init(user: 2, scope: "SHARED", zoneID: 8, zoneName: "Ünïcode zone", after: 0, floor: 0)),
            .database(.init(user: 1, scope: "PRIVATE", since: [[1, 745], [4, 12]], sinceTime: 1_700_000_000_000, after: [1, 746, 1, 3],
                            next: [[1, 760], [4, 12]], nextTime: 1_700_000_001_000, read: 99)),
            .database(.init(user: 3, scope: "SHARED", since: nil, sinceTime: 0)),
        ]
        var seeds: [String: Data] = [:]
        for (index, cursor) in cursors.enumerated() {
            seeds["cursor-\(index)"] = Data([0]) + Data(cursor.encoded(secret: Self.secret).utf8)
        }
        for (index, token) in tokens.enumerated() {
            seeds["change-token-\(index)"] = Data([1]) + Data(token.encoded(secret: Self.secret).utf8)
        }
        return seeds
    }
}
