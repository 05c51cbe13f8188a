import ArgumentParser

/// `canopy tokens api`: containers' API tokens (`ckAPIToken`).
struct TokensAPI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "api",
        abstract: "Manage CloudKit Web Services API tokens (ckAPIToken), one or more a container.",
        discussion: """
            Every request to /database/1/CONTAINER/ENVIRONMENT/… carries ?ckAPIToken=TOKEN; a request \
            without a live token for the container in its path is refused (401 AUTHENTICATION_FAILED). \
            The token names the app, not a person: the person is the ckWebAuthToken's \
            (docs/WEB_SERVICES.md).
            """,
        subcommands: [TokensAPIAdd.self, TokensAPIList.self, TokensAPIRevoke.self]
    )
}
