import CanopyPlanner
import Foundation

/// A `POST /graphql` body sent without a token (docs/API.md §15): every root
/// field the gateway's gate lets through (``AnonymousFields``) must be a
/// query's `lookup`, `records` or `zoneChanges` (or `__typename`), and the
/// plan it becomes must read the public zone and no caller's own: whatever
/// the aliases, variables, fragments or repeated arguments, the gate and
/// the plan must read the same scope. Traps otherwise.
struct AnonymousAccessTarget: FuzzTarget {
    static let name = "anonymous-access"

    func run(_ bytes: UnsafeRawBufferPointer) {
        guard let (request, fields) = GraphQLTarget.parse(bytes) else { return }
        for field in fields where AnonymousFields.allows(field, in: request) {
            if field.name == "__typename" { continue }
            guard request.operation.operation == .query, AnonymousFields.reads.contains(field.name) else {
                fatalError("a tokenless request reached \(field.name) in a \(request.operation.operation)")
            }
            let sql: String?
            switch field.name {
            case "lookup": sql = (try? LookupPlan(field, request: request))?.statement.sql
            case "records":
                sql = (try? RecordsPlan(field, request: request, schema: GraphQLTarget.schema, secret: GraphQLTarget.secret))?.statement.sql
            case "zoneRanges": sql = (try? ZoneRangesPlan(field, request: request, userID: ChangeToken.anonymousUser))?.statement.sql
            default:
                sql = (try? ZoneChangesPlan(field, request: request, userID: ChangeToken.anonymousUser, secret: GraphQLTarget.secret))?.statement.sql
            }
            // A plan that refuses its arguments runs nothing; one that runs must read the public zone alone.
            guard let sql else { continue }
            guard sql.contains("FROM canopy.zones z WHERE z.owner_id = 0"), !sql.contains("z.owner_id = canopy.current_user_id()"),
                  !sql.contains("z.owner_id <> canopy.current_user_id()") else {
                fatalError("a tokenless \(field.name) was planned outside the public zone: \(sql)")
            }
        }
    }
}
