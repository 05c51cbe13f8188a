/// Reads the token out of what a client presents, the same way for every
/// transport: an HTTP `Authorization` header, a WebSocket upgrade's header,
/// or a `connection_init` payload. Byte by byte: it runs on every request.
enum BearerTokenReader {
    /// The token of `Bearer <token>` (the scheme in any case, blanks around
    /// the token ignored). Without the scheme: the whole value when
    /// `schemeOptional` (a payload's `token` key), else nil.
    static func token(in value: String, schemeOptional: Bool = false) -> String? {
        let bytes = value.utf8
        let isBlank = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        let trimmed = bytes.drop(while: isBlank)
        let hasScheme = trimmed.count > 7 && trimmed.prefix(7).elementsEqual("bearer ".utf8, by: { $0 | 0x20 == $1 })
        guard hasScheme || schemeOptional else { return nil }
        let token = trimmed.dropFirst(hasScheme ? 7 : 0).drop(while: isBlank).reversed().drop(while: isBlank).reversed()
        return token.isEmpty ? nil : String(decoding: token, as: UTF8.self)
    }
}
