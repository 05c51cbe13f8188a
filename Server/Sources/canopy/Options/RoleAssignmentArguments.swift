import ArgumentParser

/// The role and the user of `canopy roles add` and `canopy roles remove`.
struct RoleAssignmentArguments: ParsableArguments {
    @Argument(help: "The role, as CREATE ROLE declared it (e.g. Moderator).")
    var role: String

    @Argument(help: "The user's name or userRecordName.")
    var user: String
}
