import CanopyQuery
import CanopyStore
import HTTPTypes
import Hummingbird

/// `GET /share/<token>`: what a share URL shows in a browser. Nobody is
/// signed in there, so a public share shows its title and a private or
/// unknown one shows the same page without anything of the share's; both
/// say how to open the link in an app (which calls `acceptShare(url:)`).
struct SharePageController {
    let database: RequestDatabase
    let configuration: GatewayConfiguration

    func register(on router: Router<CanopyRequestContext>) {
        router.get("share/:token") { _, context -> Response in
            let raw = context.parameters.get("token") ?? ""
            let token = ShareMetadataPlan.token(in: raw)
            var title: String?
            if let token {
                title = try await database.read(SharePagePlan(token: token).statement, as: nil, logger: context.logger) { rows in
                    try rows.first.map(SharePagePlan.title)
                }
            }
            let base = configuration.publicURL.hasSuffix("/") ? String(configuration.publicURL.dropLast()) : configuration.publicURL
            let url = base + "/share/" + raw
            return Self.page(title: title, url: url)
        }
    }

    static func page(title: String?, url: String) -> Response {
        let heading = title.map { escape($0) } ?? "A shared item"
        let body = """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <meta name="robots" content="noindex"><title>\(heading)</title>
            <style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;line-height:1.5}code{word-break:break-all}</style>
            </head><body><main>
            <h1>\(heading)</h1>
            <p>\(title == nil ? "If this was shared with you, open" : "Open") this link in the app that uses it, signed in with your account:
            the app accepts the share with <code>acceptShare(url:)</code> and shows it with your other shared items.</p>
            <p><code>\(escape(url))</code></p>
            </main></body></html>
            """
        var headers = HTTPFields()
        headers[.contentType] = "text/html; charset=utf-8"
        headers[.cacheControl] = "no-store"
        headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: body)))
    }

    static func escape(_ text: String) -> String {
        var escaped = ""
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}
