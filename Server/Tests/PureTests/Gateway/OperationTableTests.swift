@testable import CanopyGateway
import CanopyPlanner
import GraphQL
import Testing

/// The executor finds every root field by name: a field added to
/// `Server/schema/canopy.graphql` without an operation fails here, not silently.
@Suite("Operation table")
struct OperationTableTests {
    @Test("every Query and Mutation field of the schema has an operation, and no operation lacks a field")
    func everyFieldServed() throws {
        let schema = GraphQLAPI.schema
        let queries = try #require(schema.queryType).fields().keys.sorted()
        let mutations = try #require(schema.mutationType).fields().keys.sorted()
        #expect(OperationTable.queries.keys.sorted() == queries)
        #expect(OperationTable.mutations.keys.sorted() == mutations)
    }

    @Test("one bearer-token reader for every transport")
    func bearerTokens() {
        #expect(BearerTokenReader.token(in: "Bearer cnp_a_b") == "cnp_a_b")
        #expect(BearerTokenReader.token(in: "bEaReR \t cnp_a_b  ") == "cnp_a_b")
        #expect(BearerTokenReader.token(in: "  Bearer cnp_a_b") == "cnp_a_b")
        #expect(BearerTokenReader.token(in: "cnp_a_b") == nil, "HTTP needs the scheme")
        #expect(BearerTokenReader.token(in: "Basic abc") == nil)
        #expect(BearerTokenReader.token(in: "Bearer ") == nil)
        #expect(BearerTokenReader.token(in: "Bearer    ") == nil)
        #expect(BearerTokenReader.token(in: " cnp_a_b ", schemeOptional: true) == "cnp_a_b", "a payload's token key may omit it")
        #expect(BearerTokenReader.token(in: "Bearer cnp_a_b", schemeOptional: true) == "cnp_a_b")
        #expect(BearerTokenReader.token(in: "   ", schemeOptional: true) == nil)
    }
}
