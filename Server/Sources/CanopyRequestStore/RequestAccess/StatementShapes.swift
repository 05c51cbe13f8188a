import PostgresNIO
import Tracing
import Synchronization

/// Gives each distinct statement shape (SQL text and parameter types) a
/// prepared-statement name for the life of the process, so that every
/// connection parses and plans a shape once and then only binds values.
///
/// PostgresNIO prepares a statement per connection on first use and keeps
/// it (``PostgresPreparedStatement``), but it names statements by type.
/// Shapes are only known at run time, so each shape gets a number, and the
/// number becomes a type (``ShapeSlot``) whose statement reads its SQL from
/// here. A number's SQL never changes once given. Past `capacity` shapes,
/// new ones run unnamed (parsed each time), so a client inventing endless
/// shapes cannot make the server hold endless plans.
public final class StatementShapes: Sendable {
    /// One process-wide numbering: the statements' names live on
    /// connections, and a name must mean the same SQL on every connection.
    public static let shared = StatementShapes(capacity: 2048)

    struct Shape: Hashable, Sendable {
        let sql: String
        let parameterTypes: [PostgresDataType]
    }

    struct Numbering {
        var shapes: [Shape] = []
        var numbers: [Shape: Int] = [:]
    }

    let capacity: Int
    private let numbering = Mutex(Numbering())

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// The shape's number (from 1), or nil when all numbers are given.
    func number(sql: String, parameterTypes: [PostgresDataType]) -> Int? {
        let shape = Shape(sql: sql, parameterTypes: parameterTypes)
        return numbering.withLock { numbering in
            if let number = numbering.numbers[shape] { return number }
            guard numbering.shapes.count < capacity else { return nil }
            numbering.shapes.append(shape)
            numbering.numbers[shape] = numbering.shapes.count
            return numbering.shapes.count
        }
    }

    func shape(_ number: Int) -> Shape {
        numbering.withLock { $0.shapes[number - 1] }
    }

    /// How many shapes have a number (for metrics and tests).
    public var count: Int {
        numbering.withLock { $0.shapes.count }
    }
}

/// A shape number as a type: binary digits from the most significant, each
/// a generic wrapper, so that a number known at run time can pick a
/// distinct ``PostgresPreparedStatement`` type.
protocol ShapeSlot {
    static var number: Int { get }
}

enum ShapeSlotOne: ShapeSlot {
    static var number: Int { 1 }
}

enum ShapeSlotBit0<Higher: ShapeSlot>: ShapeSlot {
    static var number: Int { Higher.number << 1 }
}

enum ShapeSlotBit1<Higher: ShapeSlot>: ShapeSlot {
    static var number: Int { Higher.number << 1 | 1 }
}

extension StatementShapes {
    /// The slot type of a number (≥ 1).
    static func slot(_ number: Int) -> any ShapeSlot.Type {
        precondition(number >= 1)
        if number == 1 { return ShapeSlotOne.self }
        let higher = slot(number >> 1)
        return number & 1 == 0 ? appending0(higher) : appending1(higher)
    }

    private static func appending0<Higher: ShapeSlot>(_: Higher.Type) -> any ShapeSlot.Type { ShapeSlotBit0<Higher>.self }
    private static func appending1<Higher: ShapeSlot>(_: Higher.Type) -> any ShapeSlot.Type { ShapeSlotBit1<Higher>.self }
}

/// The prepared statement of one shape: its name and SQL come from the
/// shape's number, its values from the request.
struct ShapedStatement<Slot: ShapeSlot>: PostgresPreparedStatement {
    typealias Row = PostgresRow

    static var name: String { "canopy_shape_\(Slot.number)" }
    static var sql: String { StatementShapes.shared.shape(Slot.number).sql }
    static var bindingDataTypes: [PostgresDataType] { StatementShapes.shared.shape(Slot.number).parameterTypes }

    let bindings: PostgresBindings

    func makeBindings() throws -> PostgresBindings { bindings }
    func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
}

extension PostgresConnection {
    /// Runs a statement prepared by its shape on this connection (inside
    /// its transaction, if one is open) and collects its rows.
    public func executeShaped(_ query: PostgresQuery, parameterTypes: [PostgresDataType], logger: Logger) async throws -> [PostgresRow] {
        try await executeShaped(query, parameterTypes: parameterTypes, number: .unknown, logger: logger)
    }

    /// ``executeShaped(_:parameterTypes:logger:)`` with the shape's number
    /// when it was found before (``PreparedRead``).
    func executeShaped(
        _ query: PostgresQuery, parameterTypes: [PostgresDataType], number known: PreparedRead.Number, logger: Logger
    ) async throws -> [PostgresRow] {
        guard ServiceContext.current?.isCanopyTraced == true else {
            return try await executeShaped(query, parameterTypes: parameterTypes, resolving: known, logger: logger)
        }
        return try await CanopySpan.run("db query", ofKind: .client) { span in
            let rows = try await executeShaped(query, parameterTypes: parameterTypes, resolving: known, logger: logger)
            span?.updateAttributes { attributes in
                attributes["db.system.name"] = "postgresql"
                // The statement's text holds no values (every value is bound).
                attributes["db.query.text"] = String(query.sql.prefix(1000))
                attributes["db.response.returned_rows"] = rows.count
            }
            return rows
        }
    }

    private func executeShaped(
        _ query: PostgresQuery, parameterTypes: [PostgresDataType], resolving known: PreparedRead.Number, logger: Logger
    ) async throws -> [PostgresRow] {
        let number: Int?
        switch known {
        case .unknown: number = StatementShapes.shared.number(sql: query.sql, parameterTypes: parameterTypes)
        case .numbered(let found): number = found
        case .unnumbered: number = nil
        }
        guard let number else {
            return try await self.query(query, logger: logger).collect()
        }
        return try await executeShaped(StatementShapes.slot(number), query.binds, logger: logger)
    }

    private func executeShaped<Slot: ShapeSlot>(_: Slot.Type, _ binds: PostgresBindings, logger: Logger) async throws -> [PostgresRow] {
        var rows: [PostgresRow] = []
        for try await row in try await execute(ShapedStatement<Slot>(bindings: binds), logger: logger) {
            rows.append(row)
        }
        return rows
    }
}
