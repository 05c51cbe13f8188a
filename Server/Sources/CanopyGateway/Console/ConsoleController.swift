import CanopyIdentity
import Foundation
import HTTPTypes
import Hummingbird

/// `GET /` (the console's page) and `GET /console/<file>` (its styles and
/// modules), from memory. Files are revalidated on every load (`no-cache`
/// with an ETag), so a new release is picked up at once and an unchanged
/// file costs a 304.
struct ConsoleController {
    let files: ConsoleFiles
    let transport: ConsoleTransport

    init(files: ConsoleFiles, transport: ConsoleTransport) {
        self.files = files
        self.transport = transport
    }

    func register(on router: Router<CanopyRequestContext>) {
        router.get("/") { request, context -> Response in
            guard transport.allows(client: context.channel.remoteAddress) else { return Self.plainHTTPRefusal }
            return serve("index.html", request)
        }
        router.get("console/:name") { request, context -> Response in
            guard transport.allows(client: context.channel.remoteAddress) else { return Self.plainHTTPRefusal }
            return serve(context.parameters.get("name") ?? "", request)
        }
    }

    /// What a browser elsewhere gets instead of the console over plain HTTP.
    static var plainHTTPRefusal: Response {
        let text = "The Canopy console is served over plain HTTP only to this machine: it takes your sign-in, "
            + "which anyone on the network path could read. Reach Canopy through TLS (a proxy in front, with "
            + "canopy serve --public-url https://...), or start it with --console-over-http.\n"
        return Response(status: .forbidden, headers: [.contentType: "text/plain; charset=utf-8", .cacheControl: "no-store"],
                        body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    func serve(_ name: String, _ request: Request) -> Response {
        files.response(named: name, to: request)
    }
}
