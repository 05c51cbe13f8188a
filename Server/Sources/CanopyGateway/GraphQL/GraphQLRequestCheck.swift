import CanopyPlanner

/// The steps every GraphQL request takes before it runs, over HTTP and
/// WebSocket alike: the document parsed and validated within the depth and
/// alias limits, then its root fields read and their cost checked.
struct GraphQLRequestCheck {
    let configuration: GatewayConfiguration
    /// The cost limit: `--max-query-cost`, or `--anonymous-max-query-cost` without a token.
    var maximumCost: Int

    init(configuration: GatewayConfiguration, maximumCost: Int? = nil) {
        self.configuration = configuration
        self.maximumCost = maximumCost ?? configuration.limits.maximumQueryCost
    }

    /// The document parsed and validated against the schema.
    func parse(_ request: GraphQLHTTPRequest) throws -> ParsedRequest {
        var parsed = try ParsedRequest(
            query: request.query,
            variables: request.variables ?? [:],
            operationName: request.operationName,
            limits: .init(maximumDepth: configuration.maximumDepth, maximumAliases: configuration.maximumAliases)
        )
        parsed.publicURL = configuration.publicURL
        return parsed
    }

    /// The operation's root fields, refused when together they cost more
    /// than the limit.
    func rootFields(of parsed: ParsedRequest) throws -> [SelectedField] {
        try costChecked(try parsed.rootFields(), in: parsed)
    }

    /// `fields` (the document's root fields, collected once) if the
    /// document's cost is within the limit.
    func costChecked(_ fields: [SelectedField], in parsed: ParsedRequest) throws -> [SelectedField] {
        try QueryCost.check(fields, in: parsed, maximum: maximumCost)
        return fields
    }
}
