/// The secret that tells an asset the database typed from text that only
/// looks like one (issue 64). The gateway's connections carry it as the
/// setting `canopy.asset_marker`; the SQL that writes records' fields
/// prefixes each stored asset's digest with it (sql/functions/asset_marks.sql),
/// and the URL signer signs only digests so prefixed, removing the prefix.
/// Random for each process and never part of an answer, so no saved
/// string, field name or alias can carry it.
public enum AssetMarker {
    /// `~cnpasset`, 32 random hex digits and `:` (a `~` is rare in JSON,
    /// so the byte search for the mark is fast).
    public static let prefix: String = {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return "~cnpasset" + Hex.encode(bytes) + ":"
    }()

    /// The connection setting that carries ``prefix``.
    public static let setting = "canopy.asset_marker"
}
