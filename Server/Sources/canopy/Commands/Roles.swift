import ArgumentParser

/// `canopy roles`: who holds the public database's custom security roles.
struct Roles: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Assign users to the public database's custom security roles (CREATE ROLE in the schema file).",
        discussion: """
            A record type's GRANT lines give READ, CREATE or WRITE to _world (everyone, even without a token), \
            _icloud (every signed-in user), _creator (a record's creator) or a custom role; this command \
            decides who holds a custom role. A change holds from each user's next request, and public \
            change tokens issued before it answer CHANGE_TOKEN_EXPIRED (docs/PUBLIC_DATABASE.md).
            """,
        subcommands: [RolesAdd.self, RolesRemove.self, RolesList.self]
    )
}
