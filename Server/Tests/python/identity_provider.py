"""A real OpenID Connect provider's moving parts, for the identity tests.

It mints tokens with PyJWT (over `cryptography`), an independent JOSE
implementation, and serves the key set (JWKS) over HTTP on loopback, as
Apple, Google or any OIDC issuer does. Two HTTP servers:

- the key server: GET /jwks answers the current key set;
- the control server: POST /mint {"key", "claims", "header"} answers a
  signed token; POST /rotate {"keys": [...]} changes which keys the JWKS
  holds; POST /stop-jwks closes the key server (the provider is down);
  GET /fetches answers how many times /jwks was fetched;
  GET /authorize is the provider's sign-in page for browsers: it signs
  in, at once, the person POST /sign-in-as {"claims": {...}} named, and
  redirects to redirect_uri. With response_type=id_token (the implicit
  flow) the id token is in the fragment (#id_token=...&state=...); with
  response_type=code (the authorization code flow, PKCE required:
  code_challenge with code_challenge_method=S256) a one-time code is in
  the query (?code=...&state=...). GET /authorizations answers the query
  parameters each /authorize was called with.
  POST /token is the token endpoint, for public clients (form-encoded, CORS
  open as such providers' are): grant_type=authorization_code with code,
  redirect_uri, client_id and code_verifier (whose SHA-256 must be the
  challenge) answers {id_token, refresh_token, token_type, expires_in};
  grant_type=refresh_token answers a new id token (no nonce) and a new
  refresh token, the old one spent. POST /revoke-refresh-tokens spends
  every refresh token (the person signed out at the provider); GET
  /token-requests answers each /token call's grant_type.

Keys: "rsa1", "rsa2" (RSA 2048, RS256) and "ec1" (P-256, ES256). Special
signing modes for the refusal tests: "none" (alg none, no signature),
"hs-with-rsa1-public" (HS256 keyed with rsa1's public key PEM, the
algorithm-confusion attack) and "hs-secret:<secret>" (HS256 with a shared
secret, as Supabase does).

Prints "ready <control port> <jwks port>" on stdout, then serves until
stdin closes.
"""
import base64
import hashlib
import hmac
import json
import secrets
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

KEYS = {
    "rsa1": ("RS256", rsa.generate_private_key(public_exponent=65537, key_size=2048)),
    "rsa2": ("RS256", rsa.generate_private_key(public_exponent=65537, key_size=2048)),
    "ec1": ("ES256", ec.generate_private_key(ec.SECP256R1())),
}
state = {"published": ["rsa1"], "fetches": 0, "signInAs": None, "authorizations": [], "codes": {}, "refreshTokens": {}, "tokenRequests": []}
lock = threading.Lock()


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def public_jwk(kid: str) -> dict:
    alg, key = KEYS[kid]
    jwk = json.loads(jwt.algorithms.get_default_algorithms()[alg].to_jwk(key.public_key()))
    jwk.update({"kid": kid, "use": "sig", "alg": alg})
    return jwk


def public_pem(kid: str) -> bytes:
    return KEYS[kid][1].public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def mint(key: str, claims: dict, header: dict) -> str:
    if key == "none":
        return jwt.encode(claims, None, algorithm="none", headers=header)
    if key.startswith("hs-secret:"):
        return jwt.encode(claims, key[len("hs-secret:"):], algorithm="HS256", headers=header)
    if key == "hs-with-rsa1-public":
        # PyJWT refuses a PEM as an HMAC secret, as it should; an attacker
        # would not, so the token is put together by hand.
        head = {"alg": "HS256", "typ": "JWT", "kid": "rsa1", **header}
        signing_input = b64url(json.dumps(head).encode()) + "." + b64url(json.dumps(claims).encode())
        signature = hmac.new(public_pem("rsa1"), signing_input.encode(), hashlib.sha256).digest()
        return signing_input + "." + b64url(signature)
    alg, private = KEYS[key]
    return jwt.encode(claims, private, algorithm=alg, headers={"kid": key, **header})


class KeyServer(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path != "/jwks":
            self.send_error(404)
            return
        with lock:
            state["fetches"] += 1
            body = json.dumps({"keys": [public_jwk(kid) for kid in state["published"]]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


jwks_server = ThreadingHTTPServer(("127.0.0.1", 0), KeyServer)


class Control(BaseHTTPRequestHandler):
    def answer(self, value):
        body = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        path, _, query = self.path.partition("?")
        if path == "/fetches":
            with lock:
                self.answer({"fetches": state["fetches"]})
        elif path == "/authorizations":
            with lock:
                self.answer({"authorizations": state["authorizations"]})
        elif path == "/token-requests":
            with lock:
                self.answer({"requests": state["tokenRequests"]})
        elif path == "/authorize":
            self.authorize({key: values[0] for key, values in urllib.parse.parse_qs(query).items()})
        else:
            self.send_error(404)

    def authorize(self, parameters):
        with lock:
            state["authorizations"].append(parameters)
            person = state["signInAs"]
        flow = parameters.get("response_type")
        if flow not in ("id_token", "code") or not parameters.get("redirect_uri") or person is None:
            self.send_error(400, "response_type=id_token or code, a redirect_uri and POST /sign-in-as first")
            return
        if flow == "code" and (parameters.get("code_challenge_method") != "S256" or len(parameters.get("code_challenge", "")) != 43):
            self.send_error(400, "the code flow needs PKCE: code_challenge (43 characters) with code_challenge_method=S256")
            return
        now = int(time.time())
        claims = {"aud": parameters.get("client_id"), "iat": now, "exp": now + 600, **person}
        if "nonce" in parameters:
            claims["nonce"] = parameters["nonce"]
        if flow == "code":
            code = secrets.token_urlsafe(24)
            with lock:
                state["codes"][code] = {"claims": claims, "challenge": parameters["code_challenge"],
                                        "redirect_uri": parameters["redirect_uri"], "client_id": parameters.get("client_id")}
            separator = "&" if "?" in parameters["redirect_uri"] else "?"
            location = parameters["redirect_uri"] + separator + urllib.parse.urlencode({"code": code, "state": parameters.get("state", "")})
        else:
            location = parameters["redirect_uri"] + "#" + urllib.parse.urlencode({"id_token": mint("rsa1", claims, {}), "state": parameters.get("state", "")})
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def cross_origin(self):
        self.send_header("Access-Control-Allow-Origin", "*")
        self.send_header("Access-Control-Allow-Headers", "Content-Type")
        self.send_header("Access-Control-Allow-Methods", "POST, OPTIONS")

    def do_OPTIONS(self):
        self.send_response(204)
        self.cross_origin()
        self.send_header("Content-Length", "0")
        self.end_headers()

    def token_answer(self, status, value):
        body = json.dumps(value).encode()
        self.send_response(status)
        self.cross_origin()
        self.send_header("Content-Type", "application/json")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def token(self, form):
        grant = form.get("grant_type")
        with lock:
            state["tokenRequests"].append(grant)
            if grant == "authorization_code":
                issued = state["codes"].pop(form.get("code", ""), None)
                if issued is None:
                    return self.token_answer(400, {"error": "invalid_grant", "error_description": "unknown or spent code"})
                verifier = form.get("code_verifier", "")
                if b64url(hashlib.sha256(verifier.encode()).digest()) != issued["challenge"]:
                    return self.token_answer(400, {"error": "invalid_grant", "error_description": "code_verifier does not match the challenge"})
                if form.get("redirect_uri") != issued["redirect_uri"] or form.get("client_id") != issued["client_id"]:
                    return self.token_answer(400, {"error": "invalid_grant", "error_description": "redirect_uri or client_id differs from the authorization's"})
                claims = issued["claims"]
            elif grant == "refresh_token":
                claims = state["refreshTokens"].pop(form.get("refresh_token", ""), None)
                if claims is None:
                    return self.token_answer(400, {"error": "invalid_grant", "error_description": "unknown or spent refresh token"})
                now = int(time.time())
                claims = {key: value for key, value in claims.items() if key != "nonce"}
                claims.update({"iat": now, "exp": now + 600})
            else:
                return self.token_answer(400, {"error": "unsupported_grant_type"})
            refresh = secrets.token_urlsafe(24)
            state["refreshTokens"][refresh] = claims
        self.token_answer(200, {"id_token": mint("rsa1", claims, {}), "refresh_token": refresh, "token_type": "Bearer", "expires_in": 600})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path == "/token":
            self.token({key: values[0] for key, values in urllib.parse.parse_qs(raw.decode()).items()})
            return
        request = json.loads(raw or b"{}")
        if self.path == "/revoke-refresh-tokens":
            with lock:
                state["refreshTokens"].clear()
            self.answer({"revoked": True})
        elif self.path == "/mint":
            self.answer({"token": mint(request["key"], request.get("claims", {}), request.get("header", {}))})
        elif self.path == "/rotate":
            with lock:
                state["published"] = request["keys"]
            self.answer({"published": request["keys"]})
        elif self.path == "/sign-in-as":
            with lock:
                state["signInAs"] = request["claims"]
            self.answer({"signInAs": request["claims"]})
        elif self.path == "/stop-jwks":
            threading.Thread(target=jwks_server.shutdown).start()
            jwks_server.server_close()
            self.answer({"stopped": True})
        else:
            self.send_error(404)

    def log_message(self, *args):
        pass


control_server = ThreadingHTTPServer(("127.0.0.1", 0), Control)
threading.Thread(target=jwks_server.serve_forever, daemon=True).start()
threading.Thread(target=control_server.serve_forever, daemon=True).start()
print(f"ready {control_server.server_address[1]} {jwks_server.server_address[1]}", flush=True)
sys.stdin.read()
