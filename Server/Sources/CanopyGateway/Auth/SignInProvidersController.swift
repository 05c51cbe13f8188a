import CanopyIdentity
import Foundation
import HTTPTypes
import Hummingbird

/// `GET /auth/providers`: the providers a browser app may sign in with
/// (CanopyJS's `container.signInProviders()` and `signIn`), each with what
/// its flow needs: authorization and token endpoints, client id, scope,
/// label. Public by nature (nothing in it is secret), so served to any
/// page the CORS policy allows, over plain HTTP too.
struct SignInProvidersController {
    let body: ByteBuffer

    init(providers: [IdentityProvider]) {
        body = Self.list(providers)
    }

    func register(on router: Router<CanopyRequestContext>) {
        router.get("auth/providers") { _, _ -> Response in
            Response(status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-cache"], body: .init(byteBuffer: body))
        }
    }

    /// `{"providers": [{name, label, authorizationURL, tokenURL?, clientID, scope}]}`, keys sorted.
    static func list(_ providers: [IdentityProvider]) -> ByteBuffer {
        let list: [[String: String]] = providers.compactMap { provider in
            provider.signIn.map { signIn in
                var entry = ["name": provider.name, "label": signIn.label, "authorizationURL": signIn.authorizationURL, "clientID": signIn.clientID, "scope": signIn.scope]
                if let tokenURL = signIn.tokenURL { entry["tokenURL"] = tokenURL }
                return entry
            }
        }
        let data = (try? JSONSerialization.data(withJSONObject: ["providers": list], options: [.sortedKeys])) ?? Data(#"{"providers":[]}"#.utf8)
        return ByteBuffer(bytes: data)
    }
}
