/// The most rows a document may make the database return, counted before
/// anything runs, so that one request cannot ask for thirty aliased pages
/// of 400 records each with their shares' participants (issue 20;
/// docs/RELIABILITY.md, "Abuse limits").
///
/// A list counts its bound times one plus what each of its items asks for;
/// an object or a scalar adds nothing of its own. The bounds: `records`,
/// `zoneChanges` and `databaseChanges` their `limit` (or its default),
/// `lookup` its names, `modifyRecords` its saves and deletes, `zones` 100,
/// `zoneRanges` 400 (a walk of the zone's feed index)
/// (a user's zones have no bound, so an estimate), a share's `participants`
/// 100 (the model's most). The document's cost is the sum of its root
/// fields', and at least 1.
public enum QueryCost {
    /// Throws `limitExceeded` at the costliest root field when the
    /// document's cost is over `maximum`.
    public static func check(_ fields: [SelectedField], in request: ParsedRequest, maximum: Int) throws {
        var total = 0
        var costliest: (cost: Int, field: SelectedField)?
        for field in fields {
            let cost = try rows(field, in: request, root: true)
            total = total.addingReportingOverflow(cost).overflow ? Int.max : total + cost
            if cost > costliest?.cost ?? -1 { costliest = (cost, field) }
        }
        guard total > maximum, let costliest else { return }
        throw QueryError(
            .limitExceeded,
            "the document may return up to \(total) rows, over the limit of \(maximum); ask for smaller pages (limit), fewer aliases or fewer nested lists",
            locations: request.location(of: costliest.field.field)
        )
    }

    static func rows(_ field: SelectedField, in request: ParsedRequest, root: Bool) throws -> Int {
        var inner = 0
        for child in field.children {
            let cost = try rows(child, in: request, root: false)
            inner = inner.addingReportingOverflow(cost).overflow ? Int.max : inner + cost
        }
        guard let bound = try bound(of: field, in: request, root: root) else { return inner }
        let (product, overflow) = bound.multipliedReportingOverflow(by: inner.addingReportingOverflow(1).overflow ? Int.max : inner + 1)
        return overflow ? Int.max : product
    }

    /// How many items the field's list may hold, or nil when it is not a list.
    /// Arguments are read only for the root fields that have a bound: a
    /// nested field's bound depends on its name alone.
    static func bound(of field: SelectedField, in request: ParsedRequest, root: Bool) throws -> Int? {
        guard root else { return field.name == "participants" ? 100 : nil }
        let arguments = { request.arguments(of: field) }
        switch field.name {
        case "records": return max(0, try arguments().int("limit", default: 100))
        case "zoneChanges", "databaseChanges", "zoneChanged", "databaseChanged": return max(0, try arguments().int("limit", default: 200))
        case "lookup": return try arguments().strings("recordNames").count
        case "modifyRecords":
            let arguments = arguments()
            let saves = if case .array(let items)? = try arguments.value("save") { items.count } else { 0 }
            return saves + (try arguments.strings("delete").count)
        case "zones": return 100
        // Cutting a zone walks its feed index twice: counted as a page.
        case "zoneRanges": return ZoneChangesPlan.maximumLimit
        default: return nil
        }
    }
}
