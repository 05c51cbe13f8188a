/// CloudKit container identifiers (`iCloud.com.example.app`), as Web
/// Services paths, `canopy serve --container` and `canopy tokens api add`
/// take them: letters, digits, `.`, `-` and `_`, starting with a letter or
/// digit, at most 255. The one check, as `canopy.container_tokens` makes it.
public enum ContainerIdentifier {
    public static func isValid(_ container: String) -> Bool {
        container.wholeMatch(of: /[A-Za-z0-9][A-Za-z0-9._-]{0,254}/) != nil
    }
}
