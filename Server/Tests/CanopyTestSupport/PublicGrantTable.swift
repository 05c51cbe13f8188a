/// The public database's permission matrix (docs/API.md §15), written once for
/// the SQL and HTTP suites: four record types, five callers, four
/// privileges, and whether the grants allow each cell.
///
/// | type     | grants                                               |
/// |----------|------------------------------------------------------|
/// | `Post`   | none: CloudKit's defaults (READ _world, CREATE _icloud, WRITE _creator) |
/// | `Member` | READ, CREATE to _icloud; WRITE to _creator           |
/// | `Flag`   | READ to _world; CREATE, WRITE to the role Moderator  |
/// | `Secret` | READ, WRITE to _creator; CREATE to _icloud (nothing to _world) |
///
/// Callers: `nobody` (no token), `stranger` (signed in), `creator` (who
/// created each record; for `Flag`, which only Moderator creates, the
/// records are moderator's), `moderator` (in Moderator) and `editor` (in
/// another role, Editor).
public enum PublicGrantTable {
    public enum Privilege: String, Sendable, CaseIterable { case read = "READ", create = "CREATE", write = "WRITE", delete = "DELETE" }

    public static let users = ["stranger", "creator", "moderator", "editor"]
    public static let callers = ["nobody"] + users
    public static let types = ["Post", "Member", "Flag", "Secret"]

    /// The schema file, as cktool exports one.
    public static let schema = """
        DEFINE SCHEMA

            CREATE ROLE Editor;
            CREATE ROLE Moderator;

            RECORD TYPE Flag (
                "___recordID" REFERENCE QUERYABLE,
                title         STRING,
                GRANT READ TO "_world",
                GRANT CREATE, WRITE TO "Moderator"
            );

            RECORD TYPE Member (
                "___recordID" REFERENCE QUERYABLE,
                title         STRING,
                GRANT READ, CREATE TO "_icloud",
                GRANT WRITE TO "_creator"
            );

            RECORD TYPE Post (
                "___recordID" REFERENCE QUERYABLE,
                title         STRING QUERYABLE SORTABLE
            );

            RECORD TYPE Secret (
                "___recordID" REFERENCE QUERYABLE,
                title         STRING,
                GRANT READ, WRITE TO "_creator",
                GRANT CREATE TO "_icloud"
            );
        """

    /// Who created the type's records in the fixtures.
    public static func creator(of type: String) -> String { type == "Flag" ? "moderator" : "creator" }

    /// Whether the grants let `who` do `privilege` on a record of `type`
    /// (created by ``creator(of:)``).
    public static func allows(_ who: String, _ privilege: Privilege, _ type: String) -> Bool {
        let signedIn = who != "nobody"
        switch (type, privilege) {
        case ("Post", .read), ("Flag", .read): return true
        case ("Post", .create), ("Member", .create), ("Secret", .create), ("Member", .read): return signedIn
        case ("Post", .write), ("Post", .delete), ("Member", .write), ("Member", .delete),
             ("Secret", .read), ("Secret", .write), ("Secret", .delete): return who == creator(of: type)
        case ("Flag", .create), ("Flag", .write), ("Flag", .delete): return who == "moderator"
        default: return false
        }
    }
}
