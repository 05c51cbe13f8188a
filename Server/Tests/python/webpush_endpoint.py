#!/usr/bin/env python3
"""A Web Push endpoint on loopback, for the push tests (docs/PUSH.md).

It plays a browser and its push service at once, with implementations
independent of Canopy's: it makes the subscription's keys (the P-256 key
pair and the 16-byte auth secret, as PushManager.subscribe does), and for
every POST it checks the VAPID token (RFC 8292, with PyJWT) and decrypts
the message (RFC 8291, with http_ece). Prints one line when ready:

    ready <port> <p256dh base64url> <auth base64url>

POST /push/<name>  a message: 201, or 410 when <name> is "gone"
GET  /received     every message so far, as JSON: decrypted payload,
                   headers, and what was wrong with it (empty: nothing)

Runs until its standard input closes.
"""
import base64
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import http_ece
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


private_key = ec.generate_private_key(ec.SECP256R1())
public_key = private_key.public_key().public_bytes(
    serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
auth_secret = os.urandom(16)
received = []
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path != "/received":
            self.send_response(404)
            self.end_headers()
            return
        with lock:
            body = json.dumps(received).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        problems = []
        port = self.server.server_address[1]
        authorization = self.headers.get("Authorization", "")
        vapid_key = None
        try:
            if not authorization.startswith("vapid "):
                raise ValueError("Authorization is not 'vapid t=…, k=…'")
            fields = dict(part.strip().split("=", 1) for part in authorization[6:].split(","))
            vapid_key = fields.get("k")
            server_key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), unb64url(fields["k"]))
            claims = jwt.decode(fields["t"], server_key, algorithms=["ES256"], audience=f"http://127.0.0.1:{port}")
            if not claims.get("sub", "").startswith(("mailto:", "https:")):
                problems.append(f"sub is {claims.get('sub')!r}")
            if not time.time() < claims["exp"] <= time.time() + 24 * 3600:
                problems.append("exp is not within 24 hours")
        except Exception as error:  # noqa: BLE001 - reported to the test
            problems.append(f"VAPID: {error}")
        if self.headers.get("Content-Encoding") != "aes128gcm":
            problems.append(f"Content-Encoding is {self.headers.get('Content-Encoding')!r}")
        if not self.headers.get("TTL"):
            problems.append("no TTL")
        payload = None
        try:
            payload = http_ece.decrypt(body, private_key=private_key, auth_secret=auth_secret, version="aes128gcm").decode()
        except Exception as error:  # noqa: BLE001
            problems.append(f"decrypt: {error}")
        with lock:
            received.append({
                "path": self.path, "payload": payload, "problems": problems,
                "topic": self.headers.get("Topic"), "urgency": self.headers.get("Urgency"), "vapidKey": vapid_key,
            })
        status = 410 if self.path.endswith("/gone") else 201
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
print(f"ready {server.server_address[1]} {b64url(public_key)} {b64url(auth_secret)}", flush=True)
sys.stdin.read()
server.shutdown()
