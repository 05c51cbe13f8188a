import HTTPTypes

/// The headers of every console and invitation page: a strict
/// Content-Security-Policy (scripts, styles and images from this origin
/// only, no inline code, no framing, requests only to this origin), no
/// referrer (an invitation page's URL holds the share's token), no
/// content sniffing.
enum PageHeaders {
    static let contentSecurityPolicy = [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data: blob:",
        "connect-src 'self'",
        "form-action 'self'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    ].joined(separator: "; ")

    static func fields(contentType: String, cache: String) -> HTTPFields {
        var headers = HTTPFields()
        headers[.contentType] = contentType
        headers[.cacheControl] = cache
        headers[.contentSecurityPolicy] = contentSecurityPolicy
        headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        headers[HTTPField.Name("X-Frame-Options")!] = "DENY"
        return headers
    }
}
