import CanopyAdmin
import CanopyRequestStore
import CanopyTestSupport
import Testing

/// PolicyExpansion: a policy's text by engine (DECISIONS 151, 158). One
/// PostgreSQL runs the files as written; Citus, which refuses a policy
/// with a subquery, runs each policy with its `/*@citus …*/ … /*@end*/`
/// spans replaced and its `(SELECT canopy.f(…))` wrappers taken off.
@Suite("Policies by engine")
struct PolicyExpansionTests {
    static let file = """
        SET LOCAL ROLE canopy_owner;
        -- (SELECT canopy.current_user_id()) in a comment stays.
        CREATE OR REPLACE FUNCTION canopy.f() RETURNS bigint LANGUAGE sql AS $$ SELECT (SELECT canopy.current_user_id()) $$;
        CREATE POLICY p ON canopy.t FOR SELECT TO canopy_gateway
            USING (t.kind = '(SELECT canopy.x())'
                OR t.owner_id = (SELECT canopy.current_user_id())
                OR t.kind = ANY ((SELECT canopy.public_record_types('READ', (SELECT canopy.flag())))::text[])
                OR /*@citus canopy.may_read(t.owner_id, t.zone_id)*/ EXISTS (SELECT 1 FROM canopy.memberships m
                    WHERE m.user_id = (SELECT canopy.current_user_id()) AND m.zone_id = t.zone_id OFFSET 0) /*@end*/);
        GRANT SELECT ON canopy.t TO canopy_gateway;
        """

    @Test("one PostgreSQL runs the file as written")
    func postgresUnchanged() throws {
        #expect(try PolicyExpansion.text(Self.file, for: .postgres, path: "sql/policies/t.sql") == Self.file)
    }

    @Test("Citus: markers replaced, wrappers taken off, in policies only; quoted text and other statements untouched")
    func citusExpanded() throws {
        let expanded = try PolicyExpansion.text(Self.file, for: .citus, path: "sql/policies/t.sql")
        #expect(expanded == """
            SET LOCAL ROLE canopy_owner;
            -- (SELECT canopy.current_user_id()) in a comment stays.
            CREATE OR REPLACE FUNCTION canopy.f() RETURNS bigint LANGUAGE sql AS $$ SELECT (SELECT canopy.current_user_id()) $$;
            CREATE POLICY p ON canopy.t FOR SELECT TO canopy_gateway
                USING (t.kind = '(SELECT canopy.x())'
                    OR t.owner_id = canopy.current_user_id()
                    OR t.kind = ANY (canopy.public_record_types('READ', canopy.flag())::text[])
                    OR canopy.may_read(t.owner_id, t.zone_id));
            GRANT SELECT ON canopy.t TO canopy_gateway;
            """)
        let policy = SQLScript(expanded).statements.first { $0.text.hasPrefix("CREATE POLICY") }!.text
        #expect(PolicyExpansion.subqueries(in: policy).isEmpty)
    }

    @Test("a subquery that is not a wrapped canopy function stays, and is reported")
    func otherSubqueriesStay() throws {
        let policy = "CREATE POLICY q ON canopy.t USING (t.id IN (SELECT id FROM canopy.u))"
        #expect(try PolicyExpansion.text(policy, for: .citus, path: "x") == policy)
        #expect(PolicyExpansion.subqueries(in: policy).count == 1)
    }

    @Test("a marker without its end is an error naming the file and line")
    func unclosedMarker() throws {
        let policy = "SET LOCAL ROLE canopy_owner;\nCREATE POLICY q ON canopy.t USING (/*@citus canopy.g()*/ true)"
        #expect {
            try PolicyExpansion.text(policy, for: .citus, path: "sql/policies/t.sql")
        } throws: { error in
            "\(error)".contains("sql/policies/t.sql line 2") && "\(error)".contains("/*@end*/")
        }
    }

    /// The policies that would still hold a subquery on Citus: none. A
    /// new policy with a subquery and no `/*@citus …*/` marker fails here.
    static let awaitingProbes: Set<String> = []

    /// The helpers that gather all of a caller's zones or shares: one
    /// PostgreSQL calls each once a statement; on Citus, per row, each
    /// would read every shard. No Citus policy calls one.
    static let gatherers = ["owned_zone_ids(", "owned_share_ids(", "member_share_ids(", "admin_share_ids(",
                            "writing_admin_share_ids(", "member_root_record_ids(", "shares_managed_with("]
    static let awaitingGatherers: Set<String> = []

    @Test("every policy of sql/ expands for Citus without a subquery or a gathering helper; one PostgreSQL runs each file as written")
    func repositoryPolicies() throws {
        var left: Set<String> = []
        var gathering: Set<String> = []
        for file in try RepeatableFile.load(directory: TestDatabase.codeDirectory) {
            let expanded = try file.expanded(for: .citus)
            for statement in SQLScript(expanded.text).statements where statement.text.hasPrefix("CREATE POLICY") {
                let words = statement.text.split(whereSeparator: \.isWhitespace)
                let policy = "\(words[2]) ON \(words[4])"
                if !PolicyExpansion.subqueries(in: statement.text).isEmpty { left.insert(policy) }
                if Self.gatherers.contains(where: statement.text.contains) { gathering.insert(policy) }
            }
            #expect(try file.expanded(for: .postgres) == file)
        }
        #expect(left == Self.awaitingProbes, "\(left.sorted())")
        #expect(gathering == Self.awaitingGatherers, "\(gathering.sorted())")
    }
}
