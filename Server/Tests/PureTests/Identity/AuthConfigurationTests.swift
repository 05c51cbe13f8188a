import CanopyIdentity
import Foundation
import Testing

/// The auth configuration file: what works, and each fault named with the
/// file, the provider and what is wrong (it stops `canopy serve` at start).
@Suite("Auth configuration")
struct AuthConfigurationTests {
    /// A folder with `auth.json` (and whatever else a case writes).
    struct Folder {
        let url: URL
        init() throws {
            url = FileManager.default.temporaryDirectory.appendingPathComponent("canopy-auth-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        }
        func write(_ name: String, _ text: String) throws -> String {
            let path = url.appendingPathComponent(name).path
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            return path
        }
    }

    /// A real RSA public key (RFC 7517's example key A.1).
    static let rsaKey = #"{"kty":"RSA","kid":"2011-04-29","n":"0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw","e":"AQAB","alg":"RS256"}"#

    @Test("the shape of docs/API.md §10 loads: a JWKS URL, a JWKS file (relative to the config) and an HS256 secret")
    func loads() throws {
        let folder = try Folder()
        _ = try folder.write("staff-jwks.json", #"{"keys": [\#(Self.rsaKey), {"kty":"oct","kid":"x","use":"enc"}]}"#)
        let path = try folder.write("auth.json", """
            {"providers": [
              {"name": "apple", "issuer": "https://appleid.apple.com", "audiences": ["com.example.fasting"], "jwksURL": "https://appleid.apple.com/auth/keys"},
              {"name": "staff", "issuer": "https://sso.example.com", "audiences": ["canopy"], "jwksFile": "staff-jwks.json"},
              {"name": "supabase", "issuer": "https://xyz.supabase.co/auth/v1", "audiences": ["authenticated"], "hs256Secret": "0123456789abcdef0123456789abcdef"}]}
            """)
        let configuration = try AuthConfiguration.load(path: path)
        #expect(configuration.providers.map(\.name) == ["apple", "staff", "supabase"])
        guard case .jwksFile(_, let keys) = configuration.providers[1].keySource else {
            Issue.record("staff should read its file")
            return
        }
        #expect(keys.keys.map(\.kid) == ["2011-04-29"])
        #expect(keys.keys.map(\.algorithm) == ["RS256"])
        #expect(keys.skipped.count == 1, "the encryption key is skipped")
    }

    @Test("a provider's signIn block gives the console its browser sign-in, with defaults for scope and label")
    func browserSignIn() throws {
        let folder = try Folder()
        let path = try folder.write("auth.json", """
            {"providers": [{"name": "google", "issuer": "https://accounts.google.com", "audiences": ["123.apps.googleusercontent.com"],
              "jwksURL": "https://www.googleapis.com/oauth2/v3/certs",
              "signIn": {"authorizationURL": "https://accounts.google.com/o/oauth2/v2/auth", "clientID": "123.apps.googleusercontent.com"}}]}
            """)
        let signIn = try #require(try AuthConfiguration.load(path: path).providers[0].signIn)
        #expect(signIn == BrowserSignIn(authorizationURL: "https://accounts.google.com/o/oauth2/v2/auth", clientID: "123.apps.googleusercontent.com",
                                        scope: "openid email profile", label: "Sign in with google"))
        #expect(signIn.tokenURL == nil, "without tokenURL: the implicit flow")
    }

    @Test("a signIn block with tokenURL asks for the code flow with PKCE")
    func browserSignInWithCodeFlow() throws {
        let folder = try Folder()
        let path = try folder.write("auth.json", """
            {"providers": [{"name": "sso", "issuer": "https://sso.example.com", "audiences": ["spa"], "jwksURL": "https://sso.example.com/keys",
              "signIn": {"authorizationURL": "https://sso.example.com/authorize", "tokenURL": "https://sso.example.com/oauth/token", "clientID": "spa"}}]}
            """)
        let signIn = try #require(try AuthConfiguration.load(path: path).providers[0].signIn)
        #expect(signIn.tokenURL == "https://sso.example.com/oauth/token")
    }

    @Test("each fault names the file, the provider and what is wrong")
    func faults() throws {
        let folder = try Folder()
        _ = try folder.write("private.json", #"{"keys": [{"kty":"RSA","kid":"p","n":"AQAB","e":"AQAB","d":"AQAB"}]}"#)
        _ = try folder.write("hidden.json", #"{"keys": [\#(Self.rsaKey), {"kty":"oct","kid":"h","k":"c2VjcmV0","use":"enc"}]}"#)
        _ = try folder.write("garbled.json", #"{"keys": [{"kty":"RSA","kid":"g","n":"!!","e":"AQAB"}]}"#)
        let provider = #""name": "staff", "issuer": "https://sso.example.com", "audiences": ["canopy"]"#
        let cases: [(text: String, says: String)] = [
            ("not json", "is not JSON"),
            (#"{"providers": []}"#, #""providers" must be a non-empty array"#),
            (#"{"providers": [{\#(provider)}]}"#, "provider 'staff': no key source"),
            (#"{"providers": [{\#(provider), "jwksURL": "https://a/k", "hs256Secret": "0123456789abcdef0123456789abcdef"}]}"#, "provider 'staff': give one key source, not jwksURL and hs256Secret"),
            (#"{"providers": [{\#(provider), "jwksUrl": "https://a/k"}]}"#, "provider 'staff': unknown key 'jwksUrl'"),
            (#"{"providers": [{\#(provider), "jwksURL": "http://sso.example.com/keys"}]}"#, "must be https (http only on loopback)"),
            (#"{"providers": [{\#(provider), "jwksFile": "missing.json"}]}"#, "provider 'staff': jwksFile \(folder.url.path)/missing.json cannot be read"),
            (#"{"providers": [{\#(provider), "jwksFile": "private.json"}]}"#, "key 'p' is a private or secret key"),
            (#"{"providers": [{\#(provider), "jwksFile": "hidden.json"}]}"#, "key 'h' is a private or secret key"),
            (#"{"providers": [{\#(provider), "jwksFile": "garbled.json"}]}"#, "key 'g' is not a valid RS256 public key"),
            (#"{"providers": [{\#(provider), "hs256Secret": "short"}]}"#, "hs256Secret must be at least 32 bytes"),
            (#"{"providers": [{"name": "staff", "issuer": "https://sso.example.com", "jwksURL": "https://a/k"}]}"#, "provider 'staff': needs \"audiences\""),
            (#"{"providers": [{\#(provider), "jwksURL": "https://a/k"}, {"name": "staff2", "issuer": "https://sso.example.com", "audiences": ["x"], "jwksURL": "https://a/k"}]}"#, "issuer https://sso.example.com is already provider 'staff''s"),
            (#"{"providers": [{\#(provider), "jwksURL": "https://a/k"}, {"name": "g", "issuer": "https://g", "otherIssuers": ["https://sso.example.com"], "audiences": ["x"], "jwksURL": "https://a/k"}]}"#, "provider 'g': issuer https://sso.example.com is already provider 'staff''s"),
            (#"{"providers": [{"name": "bad name", "issuer": "i", "audiences": ["x"], "jwksURL": "https://a/k"}]}"#, "provider 'bad name': the name must be"),
            (#"{"providers": [{\#(provider), "jwksURL": "https://a/k", "signIn": {"authorizationURL": "https://sso.example.com/auth", "clientID": "other"}}]}"#, "provider 'staff': signIn: clientID other must be one of the provider's audiences"),
            (#"{"providers": [{\#(provider), "jwksURL": "https://a/k", "signIn": {"authorizationURL": "http://sso.example.com/auth", "clientID": "canopy"}}]}"#, "signIn: authorizationURL http://sso.example.com/auth must be https"),
            (#"{"providers": [{\#(provider), "jwksURL": "https://a/k", "signIn": {"clientID": "canopy"}}]}"#, "signIn needs \"authorizationURL\""),
            (#"{"providers": [{\#(provider), "jwksURL": "https://a/k", "signIn": {"authorizationURL": "https://sso.example.com/auth", "tokenURL": "http://sso.example.com/token", "clientID": "canopy"}}]}"#, "signIn: tokenURL must be the provider's token endpoint, https (http only on loopback)"),
            (#"{"providers": [{\#(provider), "jwksURL": "https://a/k", "signIn": {"authorizationURL": "https://sso.example.com/auth", "clientID": "canopy", "secret": "x"}}]}"#, "signIn: unknown key 'secret'"),
            (#"{"providers": [{\#(provider), "jwksURL": "https://a/k", "signIn": {"authorizationURL": "https://sso.example.com/auth", "clientID": "canopy", "scope": "email"}}]}"#, "signIn: scope must include openid"),
        ]
        for (index, entry) in cases.enumerated() {
            let path = try folder.write("auth\(index).json", entry.text)
            do {
                _ = try AuthConfiguration.load(path: path)
                Issue.record("\(entry.text) loaded")
            } catch {
                #expect(error.kind == .configuration)
                #expect(error.message.hasPrefix("auth config \(path): "), "\(error.message)")
                #expect(error.message.contains(entry.says), "\(entry.says) not in: \(error.message)")
            }
        }
        do {
            _ = try AuthConfiguration.load(path: "\(folder.url.path)/nowhere.json")
            Issue.record("a missing file loaded")
        } catch {
            #expect(error.message.contains("auth config \(folder.url.path)/nowhere.json: cannot be read"), "\(error.message)")
        }
    }
}
