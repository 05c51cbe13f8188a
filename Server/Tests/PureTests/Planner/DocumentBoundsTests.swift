@testable import CanopyPlanner
import Testing

/// Issue 64: what validation may be handed is bounded before it runs, over
/// the whole document; errors are located by a binary search and only the
/// first few; caches keep documents by bytes, not by count alone.
@Suite("Bounds on a document before validation")
struct DocumentBoundsTests {
    func refusal(_ query: String) -> QueryError? {
        do {
            _ = try ParsedRequest(query: query)
            return nil
        } catch let error as QueryError {
            return error
        } catch {
            return QueryError(.internalError, "\(error)")
        }
    }

    @Test("360 KB of repeated directives (the attack that took 40 s of CPU) is refused by the count, located, before validation")
    func repeatedDirectives() throws {
        let query = "{ me " + String(repeating: "@skip(if: false) ", count: 21_000) + "{ userRecordName } }"
        #expect(query.utf8.count > 350_000)
        let error = try #require(refusal(query))
        #expect(error.code == .limitExceeded, "\(error)")
        #expect(error.message.contains("more than 100 directives"), "\(error.message)")
        #expect(error.locations == [QueryError.Location(line: 1, column: 6 + 17 * 100)], "\(error.locations)")
    }

    @Test("arguments, variable definitions, literal input values, definitions and selections of unused fragments are each bounded")
    func eachCount() throws {
        let cases: [(String, String)] = [
            ("{ me { userRecordName } } " + (0..<120).map { "fragment f\($0) on User { userRecordName }" }.joined(separator: " "), "definitions"),
            ("query(" + (0..<150).map { "$v\($0): Int" }.joined(separator: ", ") + ") { me { userRecordName } }", "variables"),
            ("{ me(" + String(repeating: "a: 1, ", count: 1_200) + ") { userRecordName } }", "arguments"),
            ("{ lookup(scope: PRIVATE, zone: {zoneName: \"Z\"}, recordNames: [" + String(repeating: "\"a\", ", count: 12_000) + "]) { record { recordName } } }", "list items and object fields"),
            ("{ me { userRecordName } } fragment unused on User { " + String(repeating: "userRecordName ", count: 6_000) + "}", "selections"),
        ]
        for (query, words) in cases {
            let error = try #require(refusal(query), "\(words)")
            #expect(error.code == .limitExceeded && error.message.contains(words), "\(words): \(error.message)")
        }
    }

    @Test("a document within the counts but with many validation errors is refused with the first, and at most five located")
    func manyErrorsFewLocations() throws {
        let small = "{ me { " + String(repeating: "nope ", count: 900) + "} }"
        let error = try #require(refusal(small))
        #expect(error.code == .badRequest && error.message.contains("nope"), "\(error.message)")
        #expect((1...5).contains(error.locations.count), "\(error.locations.count)")
        #expect(error.locations.first == QueryError.Location(line: 1, column: 8))
        // Past 16 KiB: validated without the library's locations; still refused with its first error.
        let large = "# " + String(repeating: "x", count: 20_000) + "\n" + small
        let refused = try #require(refusal(large))
        #expect(refused.code == .badRequest && refused.message.contains("nope"), "\(refused.message)")
        // And a valid long document still parses.
        let padded = "# " + String(repeating: "y", count: 20_000) + "\n{ me { userRecordName } }"
        #expect(refusal(padded) == nil)
    }

    @Test("field selection merging: one response key, two fields or two sets of arguments, is refused naming both; the same field twice merges")
    func fieldSelectionMerging() throws {
        for query in [
            "{ zones(scope: PRIVATE) { zoneName } zones(scope: SHARED) { zoneName } }",
            "{ z: zones(scope: PRIVATE) { zoneName } z: me { userRecordName } }",
            "{ me { n: userRecordName n: name } }",
            "{ ...a ...b } fragment a on Query { zones(scope: PRIVATE) { zoneName } } fragment b on Query { zones(scope: SHARED) { zoneName } }",
            "query($s: DatabaseScope!) { zones(scope: $s) { zoneName } zones(scope: PRIVATE) { zoneName } }",
        ] {
            let error = try #require(refusal(query), "\(query)")
            #expect(error.code == .badRequest && error.message.contains("conflict"), "\(query): \(error.message)")
            #expect(error.locations.count == 2, "\(query): \(error.locations)")
        }
        for query in [
            "{ zones(scope: PRIVATE) { zoneName } zones(scope: PRIVATE) { ownerName } }",
            "{ a: zones(scope: PRIVATE) { zoneName } b: zones(scope: SHARED) { zoneName } }",
            "{ me { userRecordName } ... on Query { me { userRecordName } } }",
        ] {
            #expect(refusal(query) == nil, "\(query): \(refusal(query)?.message ?? "")")
        }
        // A fragment spread inside itself through a nested field (found by
        // fuzzing: the merging check once recursed without end) is refused.
        for query in [
            "query { ...F } fragment F on Juer{ lo,okup(scoClosedRape: PRIVATE, zone: {zoneName: \"_defaultZone\"}, recordNames: [])r{ ...F } o: c{ro e dName } }",
            "query { ...F } fragment F on Query { me { userRecordName } z: zones(scope: PRIVATE) { zoneName ...G } } fragment G on Zone { share { url } ...G }",
        ] {
            #expect(refusal(query) != nil, "\(query)")
        }
    }

    @Test("lines and columns by binary search: several lines, non-ASCII text, the end of the document")
    func locator() {
        let locator = SourceLocator("ab\ncé d\n\nx")
        #expect(locator.location(ofUTF8Offset: 0) == .init(line: 1, column: 1))
        #expect(locator.location(ofUTF8Offset: 2) == .init(line: 1, column: 3))
        #expect(locator.location(ofUTF8Offset: 3) == .init(line: 2, column: 1))
        #expect(locator.location(ofUTF8Offset: 7) == .init(line: 2, column: 4), "é is two bytes, one character")
        #expect(locator.location(ofUTF8Offset: 10) == .init(line: 4, column: 1))
        #expect(locator.location(ofUTF8Offset: 99) == .init(line: 4, column: 2))
    }

    @Test("a document cache is bounded by bytes: a long document is not kept, and bytes past the budget empty it")
    func cacheByBytes() {
        let cache = DocumentCache<String, Int>(capacity: 100, byteCapacity: 1_000, largestEntry: 400)
        cache.keep(1, for: "big", bytes: 401)
        #expect(cache["big"] == nil)
        cache.keep(2, for: "a", bytes: 400)
        cache.keep(3, for: "b", bytes: 400)
        #expect(cache.usage.bytes == 800 && cache["a"] == 2)
        cache.keep(4, for: "c", bytes: 400)
        #expect(cache.usage.bytes <= 1_000 && cache["c"] == 4 && cache["a"] == nil)
        // The parsed-document cache itself never holds more than 8 MiB of text.
        #expect(ParsedRequest.cache.byteCapacity == 8 << 20 && ParsedRequest.cache.largestEntry == 64 << 10)
    }
}
