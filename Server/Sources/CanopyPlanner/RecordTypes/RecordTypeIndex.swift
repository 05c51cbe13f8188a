import CanopyEncoding
import Crypto
import Foundation

/// An index on `canopy.records` that a declared schema asks for. Its
/// expression is written by the same code that writes the compiled filter
/// (``PredicateSQL/expression(_:qualifier:)``), so the two always match:
///
/// - a QUERYABLE or SORTABLE field: a btree on (zone, value, recordName),
///   partial to its record type, serving equality, ranges, BEGINSWITH, IN,
///   sorts in either direction and the keyset cursor;
/// - a QUERYABLE LIST<STRING> or LIST<REFERENCE>: a GIN index on its
///   elements with the zone (btree_gin), for CONTAINS;
/// - the SEARCHABLE fields of a record type: one GIN full-text index over
///   their words, with the zone (btree_gin), for `self CONTAINS`.
public struct RecordTypeIndex: Sendable, Equatable {
    public enum Kind: String, Sendable {
        case btree, search, list
    }

    public var name: String
    public var recordType: String
    public var fieldName: String
    public var kind: Kind
    /// `CREATE INDEX name ON ...`, without CONCURRENTLY (the text is also
    /// what the catalog records and compares).
    public var definition: String

    init(recordType: String, fieldName: String, kind: Kind, body: SQL) {
        let digest = Hex.encode(SHA256.hash(data: Data(body.text.utf8)))
        self.name = "records_schema_" + digest.prefix(16)
        self.recordType = recordType
        self.fieldName = fieldName
        self.kind = kind
        self.definition = SQL("CREATE INDEX \(unescaped: name) ON canopy.records \(body)").text
    }

    /// Every index `document` asks for, in a stable order.
    public static func indexes(for document: RecordTypesDocument) -> [RecordTypeIndex] {
        document.recordTypes.flatMap(indexes(for:))
    }

    public static func indexes(for recordType: RecordTypeDeclaration) -> [RecordTypeIndex] {
        precondition(Names.isRecordType(recordType.name), "unchecked record type")
        let partial: SQL = "WHERE record_type = \(SQL.literal(recordType.name))"
        var indexes: [RecordTypeIndex] = []
        for field in RecordTypesPrinter.ordered(recordType.fields) where field.schema.queryable || field.schema.sortable {
            guard let expression = expression(of: field) else { continue }
            indexes.append(RecordTypeIndex(
                recordType: recordType.name, fieldName: field.name, kind: .btree,
                body: "(zone_id, (\(expression)), (record_name COLLATE \"C\")) \(partial)"
            ))
        }
        for field in RecordTypesPrinter.ordered(recordType.fields) where field.schema.queryable && !field.isSystemField
            && (field.schema.type == .list(.string) || field.schema.type == .list(.reference)) {
            indexes.append(RecordTypeIndex(
                recordType: recordType.name, fieldName: field.name, kind: .list,
                body: "USING gin (zone_id, \(PredicateSQL.textList(field.name, qualifier: "")) canopy.text_list_ops) \(partial)"
            ))
        }
        let searchable = recordType.recordSchema().searchableFields
        if let first = searchable.first {
            indexes.append(RecordTypeIndex(
                recordType: recordType.name, fieldName: first, kind: .search,
                body: "USING gin (zone_id, \(PredicateSQL.searchDocument(searchable, qualifier: "")) canopy.search_words_ops) \(partial)"
            ))
        }
        return indexes
    }

    /// The indexed expression for a field, or nil when it needs no index of
    /// its own (___recordID has one already) or its type has no order.
    static func expression(of field: FieldDeclaration) -> SQL? {
        let target: CheckedPredicate.Target
        switch SystemField(rawValue: field.name) {
        case .createTime?: target = .creationDate
        case .modTime?: target = .modificationDate
        case .createdBy?: target = .createdBy
        case .modifiedBy?: target = .modifiedBy
        case .recordID?, .etag?: return nil
        case nil:
            guard field.schema.type.isSortable else { return nil }
            target = .field(field.name, field.schema.type)
        }
        return PredicateSQL.expression(target, qualifier: "")
    }
}
