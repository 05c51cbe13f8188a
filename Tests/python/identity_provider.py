"""A real OpenID Connect provider's moving parts, for the identity tests.

It mints tokens with PyJWT (over `cryptography`), an independent JOSE
implementation, and serves the key set (JWKS) over HTTP on loopback, as
Apple, Google or any OIDC issuer does. Two HTTP servers:

- the key server: GET /jwks answers the current key set;
- the control server: POST /mint {"key", "claims", "header"} answers a
  signed token; POST /rotate {"keys": [...]} changes which keys the JWKS
  holds; POST /stop-jwks closes the key server (the provider is down);
  GET /fetches answers how many times /jwks was fetched;
  GET /authorize is the provider's sign-in page for browsers (OpenID
  Connect's implicit flow, response_type=id_token): it signs in, at once,
  the person POST /sign-in-as {"claims": {...}} named, and redirects to
  redirect_uri with #id_token=...&state=...; GET /authorizations answers
  the query parameters each /authorize was called with.

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
state = {"published": ["rsa1"], "fetches": 0, "signInAs": None, "authorizations": []}
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
        elif path == "/authorize":
            self.authorize({key: values[0] for key, values in urllib.parse.parse_qs(query).items()})
        else:
            self.send_error(404)

    def authorize(self, parameters):
        with lock:
            state["authorizations"].append(parameters)
            person = state["signInAs"]
        if parameters.get("response_type") != "id_token" or not parameters.get("redirect_uri") or person is None:
            self.send_error(400, "response_type=id_token, a redirect_uri and POST /sign-in-as first")
            return
        now = int(time.time())
        claims = {"aud": parameters.get("client_id"), "iat": now, "exp": now + 600, **person}
        if "nonce" in parameters:
            claims["nonce"] = parameters["nonce"]
        fragment = urllib.parse.urlencode({"id_token": mint("rsa1", claims, {}), "state": parameters.get("state", "")})
        self.send_response(302)
        self.send_header("Location", parameters["redirect_uri"] + "#" + fragment)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        request = json.loads(self.rfile.read(length) or b"{}")
        if self.path == "/mint":
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
