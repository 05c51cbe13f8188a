import Hummingbird

/// `GET /js/<file>`: CanopyJS's modules (`clients/js/`), from memory, so
/// the console imports the client every app uses and a page on another
/// origin can `import … from "https://gateway/js/index.js"` (module scripts
/// are fetched with CORS: `--cors-origin` decides which origins may, as for
/// `/graphql`). Not behind the console's plain-HTTP rule: the files hold no
/// sign-in. Revalidated on every load, like the console's files.
struct ClientPackageController {
    let files: ConsoleFiles

    func register(on router: Router<CanopyRequestContext>) {
        router.get("js/:name") { request, context -> Response in
            serve(context.parameters.get("name") ?? "", request)
        }
    }

    func serve(_ name: String, _ request: Request) -> Response {
        guard let file = files.file(named: name) else {
            return Response(status: .notFound, headers: [.contentType: "text/plain; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: "no such file\n")))
        }
        var headers = PageHeaders.fields(contentType: file.contentType, cache: "no-cache")
        headers[.eTag] = file.entityTag
        if request.hasCurrentCopy(of: file.entityTag) {
            return Response(status: .notModified, headers: headers)
        }
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: file.bytes))
    }
}
