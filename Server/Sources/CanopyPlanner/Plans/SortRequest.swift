/// One sort key as a door asks for it, before the record type's schema is
/// known: the field, the direction and, for a LOCATION field sorted by
/// distance, the point. GraphQL's `sort` argument and Web Services'
/// `sortBy` both become these (issue 66: no door-shaped dictionary reaches
/// the planner); ``RecordsPlan`` checks them against the schema.
public struct SortRequest: Sendable, Equatable {
    /// A point on Earth, in degrees.
    public struct Point: Sendable, Equatable {
        public var latitude: Double
        public var longitude: Double

        public init(latitude: Double, longitude: Double) {
            self.latitude = latitude
            self.longitude = longitude
        }
    }

    public var field: String
    public var descending: Bool
    /// Sorts a LOCATION field by its distance from this point.
    public var relativeLocation: Point?

    public init(field: String, descending: Bool = false, relativeLocation: Point? = nil) {
        self.field = field
        self.descending = descending
        self.relativeLocation = relativeLocation
    }

    /// GraphQL's `{field, direction: ASC|DESC, relativeLocation?: {latitude, longitude}}`.
    public init(_ item: JSONValue) throws(QueryError) {
        guard case .object(let sort) = item, case .string(let name)? = sort["field"] else {
            throw QueryError(.invalidArguments, "each sort is {field, direction}")
        }
        let direction = sort["direction"]?.stringValue ?? "ASC"
        guard direction == "ASC" || direction == "DESC" else {
            throw QueryError(.invalidArguments, "sort direction must be ASC or DESC")
        }
        var point: Point?
        if let relative = sort["relativeLocation"], !relative.isNull {
            guard case .object(let object) = relative,
                  let latitude = PredicateChecker.number(object["latitude"]), let longitude = PredicateChecker.number(object["longitude"]) else {
                throw QueryError(.invalidArguments, "relativeLocation must be {latitude: -90..90, longitude: -180..180}")
            }
            point = Point(latitude: latitude, longitude: longitude)
        }
        self.init(field: name, descending: direction == "DESC", relativeLocation: point)
    }
}
