import CanopyPlanner
import Testing

/// SQL text is made of literals, fragments, placeholders and marked text;
/// values go into binds (a `String` interpolated into `SQL` does not
/// compile: "missing argument label 'unescaped:'").
@Suite("SQL fragments")
struct SQLTests {
    @Test("values are bound, text is the source's")
    func binds() {
        var builder = SQLBuilder()
        let name = "x'; DROP TABLE canopy.records; --"
        let placeholder = builder.bind(name)
        let table: SQL = "canopy.records"
        builder.append("SELECT 1 FROM \(table) WHERE record_name = \(placeholder)::text LIMIT \(10)")
        #expect(builder.query.sql == "SELECT 1 FROM canopy.records WHERE record_name = $1::text LIMIT 10")
        #expect(builder.binds.count == 1)
    }

    @Test("literals of checked names are quoted; fragments join")
    func literalsAndJoins() {
        #expect(SQL.literal("endDate").text == "'endDate'")
        #expect(SQL.literal("it's").text == "'it''s'")
        let parts: [SQL] = ["a", "b", "c"]
        #expect(parts.joined(separator: ", ").text == "a, b, c")
        #expect(("x" + SQL(unescaped: "DESC")).text == "xDESC")
        var builder = SQLBuilder()
        #expect(builder.alias("s").text == "s1" && builder.alias("s").text == "s2")
    }
}
