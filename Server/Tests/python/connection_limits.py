"""Hostile and careless clients on raw sockets against a running `canopy serve`
(ConnectionLimitTests): an oversized header, slowloris connections that
trickle header bytes, an idle keep-alive connection, an oversized WebSocket
frame, and a WebSocket client that never answers pings (beside one that
does). Prints one JSON object of what happened; asserts nothing itself.

usage: connection_limits.py PORT TOKEN
"""
import base64
import json
import os
import socket
import struct
import sys
import threading
import time

PORT = int(sys.argv[1])
TOKEN = sys.argv[2]


def connect(timeout=10):
    s = socket.create_connection(("127.0.0.1", PORT), timeout=timeout)
    s.settimeout(timeout)
    return s


def read_until_closed(s, limit):
    """Reads until the server closes; returns (seconds waited, bytes read), or (None, bytes) at the limit."""
    start = time.monotonic()
    data = b""
    s.settimeout(0.2)
    while time.monotonic() - start < limit:
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            continue
        except (ConnectionResetError, BrokenPipeError):
            return time.monotonic() - start, data
        if not chunk:
            return time.monotonic() - start, data
        data += chunk
    return None, data


def status_of(data):
    line = data.split(b"\r\n", 1)[0].decode(errors="replace")
    parts = line.split(" ")
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None


def header(size):
    s = connect()
    s.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\nX-Filler: " + b"a" * size + b"\r\n\r\n")
    closed_after, data = read_until_closed(s, 5)
    s.close()
    return {"status": status_of(data), "closed": closed_after is not None}


def plain_get():
    start = time.monotonic()
    s = connect()
    s.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
    _, data = read_until_closed(s, 10)
    s.close()
    return status_of(data), time.monotonic() - start


def slowloris(count=20, limit=8):
    """`count` connections each sending a header byte every 200 ms; when each was closed."""
    results = [None] * count

    def one(index):
        try:
            s = connect()
            s.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n")
            start = time.monotonic()
            s.settimeout(0.2)
            while time.monotonic() - start < limit:
                try:
                    s.sendall(b"X")
                    if s.recv(1024) == b"":
                        results[index] = time.monotonic() - start
                        return
                except socket.timeout:
                    continue
                except (ConnectionResetError, BrokenPipeError):
                    results[index] = time.monotonic() - start
                    return
            s.close()
        except OSError as error:
            results[index] = f"error: {error}"

    threads = [threading.Thread(target=one, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    time.sleep(0.5)
    status, took = plain_get()
    for t in threads:
        t.join()
    return {"closed_after": results, "normal_status": status, "normal_seconds": took}


def idle():
    s = connect()
    s.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
    time.sleep(0.3)
    first = s.recv(65536)
    closed_after, _ = read_until_closed(s, 10)
    s.close()
    return {"status": status_of(first), "closed_after": closed_after}


def ws_open():
    s = connect()
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((
        "GET /graphql HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: graphql-transport-ws\r\n"
        f"Authorization: Bearer {TOKEN}\r\n\r\n").encode())
    response = b""
    while b"\r\n\r\n" not in response:
        chunk = s.recv(4096)
        if not chunk:
            raise RuntimeError("closed during the upgrade")
        response += chunk
    head, rest = response.split(b"\r\n\r\n", 1)
    if status_of(head) != 101:
        raise RuntimeError(f"no upgrade: {head[:200]!r}")
    return s, bytearray(rest)


def ws_send(s, opcode, payload):
    mask = os.urandom(4)
    length = len(payload)
    if length < 126:
        header = struct.pack("!BB", 0x80 | opcode, 0x80 | length)
    elif length < 65536:
        header = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, length)
    else:
        header = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, length)
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    s.sendall(header + mask + masked)


def ws_read(s, buffer, deadline):
    """The next frame (opcode, payload), or None when the socket closed or the deadline passed."""
    while True:
        if len(buffer) >= 2:
            length = buffer[1] & 0x7F
            offset = 2
            if length == 126 and len(buffer) >= 4:
                length = struct.unpack("!H", buffer[2:4])[0]
                offset = 4
            elif length == 127 and len(buffer) >= 10:
                length = struct.unpack("!Q", buffer[2:10])[0]
                offset = 10
            if length < 126 or offset > 2:
                if len(buffer) >= offset + length:
                    opcode = buffer[0] & 0x0F
                    payload = bytes(buffer[offset:offset + length])
                    del buffer[:offset + length]
                    return opcode, payload
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        s.settimeout(remaining)
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            return None
        except (ConnectionResetError, BrokenPipeError):
            return None
        if not chunk:
            return None
        buffer.extend(chunk)


def ws_initialised():
    s, buffer = ws_open()
    ws_send(s, 0x1, json.dumps({"type": "connection_init"}).encode())
    deadline = time.monotonic() + 10
    while True:
        frame = ws_read(s, buffer, deadline)
        if frame is None:
            raise RuntimeError("no connection_ack")
        if frame[0] == 0x1 and json.loads(frame[1]).get("type") == "connection_ack":
            return s, buffer


def ws_watch(answer_pings, seconds):
    """Reads for `seconds`; returns when and with what code the server closed, and the pings seen."""
    s, buffer = ws_initialised()
    start = time.monotonic()
    pings = 0
    while True:
        frame = ws_read(s, buffer, start + seconds)
        if frame is None:
            s.close()
            return {"closed_after": None if time.monotonic() - start >= seconds - 0.05 else time.monotonic() - start,
                    "code": None, "pings": pings}
        opcode, payload = frame
        if opcode == 0x9:
            pings += 1
            if answer_pings:
                ws_send(s, 0xA, payload)
        elif opcode == 0x8:
            code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
            s.close()
            return {"closed_after": time.monotonic() - start, "code": code, "pings": pings}


def ws_oversized(size):
    s, buffer = ws_initialised()
    ws_send(s, 0x1, b"x" * size)
    deadline = time.monotonic() + 5
    while True:
        frame = ws_read(s, buffer, deadline)
        if frame is None:
            s.close()
            return {"code": None, "closed": True}
        if frame[0] == 0x8:
            s.close()
            return {"code": struct.unpack("!H", frame[1][:2])[0] if len(frame[1]) >= 2 else None, "closed": True}


def ws_uninitialised(seconds):
    """A socket that never sends connection_init: when and with what code the server closed it.
    Timed from before the upgrade, so a stall here cannot shorten it: the
    server's wait starts after the upgrade request arrives."""
    start = time.monotonic()
    s, buffer = ws_open()
    while True:
        frame = ws_read(s, buffer, start + seconds)
        if frame is None:
            s.close()
            return {"closed_after": None, "code": None}
        opcode, payload = frame
        if opcode == 0x9:
            ws_send(s, 0xA, payload)
        elif opcode == 0x8:
            code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
            s.close()
            return {"closed_after": time.monotonic() - start, "code": code}


def main():
    results = {}
    results["small_header"] = header(2000)
    results["big_header"] = header(5000)
    results["slowloris"] = slowloris()
    results["idle"] = idle()
    results["frame"] = ws_oversized(70000)
    results["no_init"] = ws_uninitialised(30)
    quiet = {}
    answering = {}
    threads = [
        threading.Thread(target=lambda: quiet.update(ws_watch(False, 6))),
        threading.Thread(target=lambda: answering.update(ws_watch(True, 4))),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    results["no_pong"] = quiet
    results["pong"] = answering
    print(json.dumps(results))


if __name__ == "__main__":
    main()
