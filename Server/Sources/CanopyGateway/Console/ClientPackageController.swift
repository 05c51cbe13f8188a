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
            files.response(named: context.parameters.get("name") ?? "", to: request)
        }
    }
}
