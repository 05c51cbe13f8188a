"""A TCP proxy that misbehaves on command, for the network-fault tests
(docs/RELIABILITY.md, "Network faults"): between the gateway and
PostgreSQL it makes a slow, throttled, resetting or silent link, which the
kernel here cannot (no netem); between a test on the machine's loopback
and a gateway inside a network namespace it is the way in.

    python3 fault_proxy.py --listen 127.0.0.1:0 --connect 127.0.0.1:5432
                           [--connect-netns NAME]
    python3 fault_proxy.py --listen 127.0.0.1:0 --connect unix:/dir/.s.PGSQL.5432

It listens before anything else and prints `PORT=<n>`; with
`--connect-netns` it then enters that network namespace (/var/run/netns/NAME),
so what it connects to is inside it while its listener stays where it was
made. Commands, one a line on stdin, each answered `ok ...` (or `error ...`)
on stdout:

    pass               forward as a wire does (the start)
    delay MS           hold each chunk MS milliseconds before forwarding it
    throttle BYTES     forward at most BYTES a second each way
    blackhole          forward nothing and connect nothing: connections stay
                       open and silent, new ones are accepted and hang (a
                       partition, or a server that accepts but never answers)
    reset              end every open connection with a TCP RST, both sides
    count              `ok <open connections>`
    quit               stop

Only loopback and the namespace's own addresses are ever given to it by
the tests.
"""

import argparse
import asyncio
import ctypes
import os
import socket
import struct
import sys

CLONE_NEWNET = 0x40000000


class Link:
    """The state every connection reads before it forwards a chunk."""

    def __init__(self):
        self.delay = 0.0
        self.rate = 0
        self.silent = False
        self.changed = asyncio.Event()
        self.connections = set()

    def set(self, **values):
        for key, value in values.items():
            setattr(self, key, value)
        self.changed.set()
        self.changed = asyncio.Event()

    async def wait_until_open(self):
        while self.silent:
            await self.changed.wait()


def address(text):
    host, _, port = text.rpartition(":")
    return host.strip("[]"), int(port)


def target(text):
    """HOST:PORT, or unix:PATH (a PostgreSQL server's socket file)."""
    if text.startswith("unix:"):
        return ("unix", text[len("unix:"):])
    return ("tcp",) + address(text)


async def connect(where):
    if where[0] == "unix":
        return await asyncio.open_unix_connection(where[1])
    return await asyncio.open_connection(where[1], where[2])


def enter_netns(name):
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    fd = os.open(f"/var/run/netns/{name}", os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"setns into {name}: {os.strerror(errno)}")
    finally:
        os.close(fd)


def abort(writer):
    """Closes with RST: SO_LINGER on, zero seconds."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
    writer.transport.abort()


async def pump(link, reader, writer):
    try:
        while True:
            chunk = await reader.read(65536)
            if not chunk:
                break
            await link.wait_until_open()
            if link.delay:
                await asyncio.sleep(link.delay)
            if link.rate:
                await asyncio.sleep(len(chunk) / link.rate)
            await link.wait_until_open()
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, OSError, asyncio.CancelledError):
        pass
    finally:
        try:
            writer.close()
        except Exception:
            pass


async def serve_client(link, target, client_reader, client_writer):
    entry = [client_writer, None]
    link.connections.add(id(entry))
    connections[id(entry)] = entry
    try:
        await link.wait_until_open()
        try:
            upstream_reader, upstream_writer = await connect(target)
        except OSError:
            abort(client_writer)
            return
        entry[1] = upstream_writer
        await asyncio.gather(
            pump(link, client_reader, upstream_writer),
            pump(link, upstream_reader, client_writer),
        )
    finally:
        link.connections.discard(id(entry))
        connections.pop(id(entry), None)


connections = {}


async def commands(link, server):
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while True:
        line = await reader.readline()
        if not line:
            break
        words = line.decode().split()
        if not words:
            continue
        verb, rest = words[0], words[1:]
        try:
            if verb == "pass":
                link.set(delay=0.0, rate=0, silent=False)
                answer = "ok pass"
            elif verb == "delay":
                link.set(delay=int(rest[0]) / 1000.0)
                answer = f"ok delay {rest[0]}"
            elif verb == "throttle":
                link.set(rate=int(rest[0]))
                answer = f"ok throttle {rest[0]}"
            elif verb == "blackhole":
                link.set(silent=True)
                answer = "ok blackhole"
            elif verb == "reset":
                entries = list(connections.values())
                for client_writer, upstream_writer in entries:
                    abort(client_writer)
                    if upstream_writer is not None:
                        abort(upstream_writer)
                answer = f"ok reset {len(entries)}"
            elif verb == "count":
                answer = f"ok {len(connections)}"
            elif verb == "quit":
                print("ok quit", flush=True)
                break
            else:
                answer = f"error unknown command {verb!r}"
        except (IndexError, ValueError):
            answer = f"error {verb} needs a whole number"
        print(answer, flush=True)
    server.close()


async def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--listen", required=True, help="HOST:PORT to listen on (port 0: any)")
    parser.add_argument("--connect", required=True, help="HOST:PORT or unix:PATH to forward to")
    parser.add_argument("--connect-netns", help="network namespace to connect from")
    options = parser.parse_args()

    link = Link()
    where = target(options.connect)
    listener = socket.create_server(address(options.listen), reuse_port=False)
    print(f"PORT={listener.getsockname()[1]}", flush=True)
    if options.connect_netns:
        enter_netns(options.connect_netns)
    server = await asyncio.start_server(
        lambda r, w: serve_client(link, where, r, w), sock=listener
    )
    async with server:
        await commands(link, server)


if __name__ == "__main__":
    asyncio.run(main())
