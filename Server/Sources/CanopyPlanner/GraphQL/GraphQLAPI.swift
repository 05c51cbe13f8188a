import GraphQL

/// The GraphQL API's schema (`Server/schema/canopy.graphql`), built once:
/// validating a document against it is what makes a request well-formed.
/// Not to be confused with record-type schemas (`RecordTypes/`) or the
/// PostgreSQL schema `canopy`.
public enum GraphQLAPI {
    public static let schema: GraphQLSchema = {
        do {
            return try buildSchema(source: GraphQLAPISource.sdl)
        } catch {
            fatalError("the compiled-in SDL does not build: \(error)")
        }
    }()
}
