import CanopyPlanner
import CanopyRequestStore
import HTTPTypes
import Hummingbird

/// `GET /share/<token>`: the page an invitation link opens, as
/// `icloud.com/share/…` is. Rendered without anyone signed in, so it shows
/// a share's title, owner, kind and permission only when the share is
/// public (docs/API.md §3: anyone holding the URL may open it); a private or
/// unknown share gets the same page with nothing of the share's. The
/// page's module (`invitation.js`) then signs the person in, asks
/// `shareMetadata` as them (row-level security decides what they learn)
/// and offers Accept.
struct InvitationPageController {
    let database: RequestDatabase
    let configuration: GatewayConfiguration

    func register(on router: Router<CanopyRequestContext>) {
        router.get("share/:token") { _, context -> Response in
            let raw = context.parameters.get("token") ?? ""
            var summary: SharePagePlan.Summary?
            if let token = ShareMetadataPlan.token(in: raw) {
                PlanOutcome.uncached.count()
                summary = try await database.read(SharePagePlan(token: token).statement, as: nil, logger: context.logger) { rows in
                    try rows.first.map(SharePagePlan.summary)
                }
            }
            let base = configuration.publicURL.hasSuffix("/") ? String(configuration.publicURL.dropLast()) : configuration.publicURL
            return Self.page(summary, url: base + "/share/" + raw)
        }
    }

    static func page(_ summary: SharePagePlan.Summary?, url: String) -> Response {
        let heading = summary.map { escape($0.title) } ?? "A shared item"
        var description = ""
        if let summary {
            let owner = summary.ownerName.map { escape($0) } ?? "Someone"
            let what = summary.isRecordHierarchy ? "a record and the records under it" : "a zone and every record in it"
            let can = summary.permission == "READ_WRITE" ? "view and edit" : "view"
            description = "<p id=\"share-summary\">\(owner) shared \(what). Anyone with this link can \(can) it.</p>"
            // The preview (docs/API.md §17): the root's title and the share's thumbnail.
            if let root = summary.rootTitle, !root.isEmpty {
                description += "<p id=\"share-root-title\" class=\"preview\">\(escape(root))</p>"
            }
            if let thumbnail = summary.thumbnailBase64, !thumbnail.isEmpty {
                let type = thumbnail.hasPrefix("/9j/") ? "image/jpeg" : "image/png"
                description += "<img id=\"share-thumbnail\" class=\"preview\" alt=\"\" src=\"data:\(type);base64,\(escape(thumbnail))\">"
            }
        }
        let body = """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <meta name="robots" content="noindex"><title>\(heading) · Canopy</title>
            <link rel="stylesheet" href="/console/console.css">
            <script type="module" src="/console/invitation.js"></script>
            </head><body class="invitation-page">
            <main id="invitation" data-share-url="\(escape(url))">
            <p class="brand">Canopy</p>
            <h1 id="share-title">\(heading)</h1>
            \(description)
            <section id="invitation-actions" aria-live="polite">
            <p>Sign in to see whether this was shared with you.</p>
            <noscript><p>The invitation needs JavaScript to sign you in. In an app, open this link signed in with your account: the app accepts the share with <code>acceptShare(url:)</code>.</p></noscript>
            </section>
            <p class="hint">In an app, this link is accepted with <code>acceptShare(url:)</code>: <code class="share-url">\(escape(url))</code></p>
            </main></body></html>
            """
        return Response(
            status: .ok,
            headers: PageHeaders.fields(contentType: "text/html; charset=utf-8", cache: "no-store"),
            body: .init(byteBuffer: ByteBuffer(string: body))
        )
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
