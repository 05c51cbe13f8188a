import GraphQL

/// The built schema, made once: validating a document against it is what
/// makes a request well-formed.
public enum CanopySchema {
    public static let schema: GraphQLSchema = {
        do {
            return try buildSchema(source: CanopySchemaSource.sdl)
        } catch {
            fatalError("the compiled-in SDL does not build: \(error)")
        }
    }()
}
