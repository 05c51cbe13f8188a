import GraphQL

/// The spec's rules on definition names (an anonymous operation stands
/// alone; no two operations, and no two fragments, share a name), checked
/// after parsing and before the GraphQL library validates. The library keys
/// dictionaries by `OperationDefinition` and `FragmentDefinition`, whose
/// hash is their identity but whose equality is their text: two operations
/// alike in name and body (`{ me } { me }`) break `Hashable`'s contract,
/// and Swift traps when their hashes meet, so one small request took the
/// gateway down at random (found while fuzzing, docs/FUZZING.md). With
/// these rules held, no two definitions of a kind are equal.
enum DefinitionNames {
    static func check(_ document: Document, locator: SourceLocator) throws {
        func refuse(_ message: String, at node: any Node) -> QueryError {
            QueryError(.badRequest, message, locations: node.loc.map { [locator.location(ofUTF8Offset: $0.start)] } ?? [])
        }
        let operations = document.definitions.compactMap { $0 as? OperationDefinition }
        if operations.count > 1, let anonymous = operations.first(where: { $0.name == nil }) {
            throw refuse("This anonymous operation must be the only defined operation.", at: anonymous)
        }
        var operationNames = Set<String>()
        for operation in operations {
            if let name = operation.name?.value, !operationNames.insert(name).inserted {
                throw refuse("There can be only one operation named \"\(name)\".", at: operation)
            }
        }
        var fragmentNames = Set<String>()
        for case let fragment as FragmentDefinition in document.definitions {
            if !fragmentNames.insert(fragment.name.value).inserted {
                throw refuse("There can be only one fragment named \"\(fragment.name.value)\".", at: fragment)
            }
        }
    }
}
