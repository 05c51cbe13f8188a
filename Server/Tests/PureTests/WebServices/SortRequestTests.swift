import CanopyPlanner
import CanopyWebServices
import Testing

/// Sort keys reach the planner typed (issue 66): GraphQL's `sort` items and
/// Web Services' `sortBy` descriptors become the same ``SortRequest``s.
@Suite("Sort requests from both doors")
struct SortRequestTests {
    @Test("GraphQL's {field, direction, relativeLocation} and Web Services' {fieldName | systemFieldName, ascending, relativeLocation} make the same typed sort keys; malformed ones are refused naming what is wrong")
    func bothDoorsAgree() throws {
        let graphQL = try [
            #"{"field": "title"}"#,
            #"{"field": "creationDate", "direction": "DESC"}"#,
            #"{"field": "place", "direction": "ASC", "relativeLocation": {"latitude": 48.85, "longitude": 2.35}}"#,
        ].map { text in try SortRequest(try JSONValue(parsing: text)) }
        let webServices = try WebServicesQuery(try JSONValue(parsing: #"""
            {"recordType": "Book", "sortBy": [
              {"fieldName": "title"},
              {"systemFieldName": "createdTimestamp", "ascending": false},
              {"fieldName": "place", "relativeLocation": {"value": {"latitude": 48.85, "longitude": 2.35}}}
            ]}
            """#)).sort
        let expected = [
            SortRequest(field: "title"),
            SortRequest(field: "creationDate", descending: true),
            SortRequest(field: "place", relativeLocation: .init(latitude: 48.85, longitude: 2.35)),
        ]
        #expect(graphQL == expected)
        #expect(webServices == expected)

        #expect(throws: QueryError.self) { try SortRequest(try JSONValue(parsing: #"{"direction": "ASC"}"#)) }
        #expect(throws: QueryError.self) { try SortRequest(try JSONValue(parsing: #"{"field": "a", "direction": "UP"}"#)) }
        #expect(throws: QueryError.self) { try SortRequest(try JSONValue(parsing: #"{"field": "a", "relativeLocation": "here"}"#)) }
        #expect(throws: QueryError.self) {
            try WebServicesQuery(try JSONValue(parsing: #"{"recordType": "Book", "sortBy": [{"fieldName": "a", "ascending": "yes"}]}"#))
        }
    }
}
