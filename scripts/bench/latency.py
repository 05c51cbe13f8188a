"""Live notifications and push, timed: from a commit's HTTP answer to a
subscriber's `next`, and to a webhook's arrival."""
import json
import sys
import time

from common import URL
from servers import graphql


def notification_latency(token, commits=50):
    """Milliseconds from a commit's HTTP answer to a zoneChanged subscriber's
    `next` (graphql-transport-ws over the `websockets` package), per commit."""
    import asyncio
    import websockets

    async def measure():
        graphql(token, 'mutation { saveZone(zoneName: "Live") { zoneName } }')
        run_id = time.monotonic_ns()
        page = graphql(token, 'query { zoneChanges(scope: PRIVATE, zone: {zoneName: "Live"}) { token } }')
        since = page["zoneChanges"]["token"]
        delays = []
        async with websockets.connect(URL.replace("http://", "ws://"), subprotocols=["graphql-transport-ws"]) as socket:
            await socket.send(json.dumps({"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}}))
            await socket.recv()
            await socket.send(json.dumps({"id": "1", "type": "subscribe", "payload": {
                "query": 'subscription($s: String) { zoneChanged(scope: PRIVATE, zone: {zoneName: "Live"}, since: $s) { token } }',
                "variables": {"s": since}}}))
            loop = asyncio.get_running_loop()
            for index in range(commits):
                save = ('mutation { modifyRecords(scope: PRIVATE, zone: {zoneName: "Live"}, save: '
                        f'[{{recordName: "l{run_id}_{index}", recordType: "Note", fields: {{n: {index}}}}}]) {{ saved {{ recordName }} }} }}')
                await loop.run_in_executor(None, graphql, token, save)
                committed = time.monotonic()
                message = json.loads(await asyncio.wait_for(socket.recv(), timeout=10))
                if message.get("type") != "next":
                    sys.exit(f"unexpected subscription message: {message}")
                delays.append((time.monotonic() - committed) * 1000)
        return delays

    return asyncio.run(measure())


def push_latency(token, commits=20):
    """Issue 23: what push adds to a write, and how soon a webhook hears.

    A webhook receiver (http.server on loopback, answering 204) stands in
    for the device. Each commit saves one record in its own zone; the same
    loop runs first with no push subscription (a write then only probes
    `push_covered`) and then with a DATABASE subscription and a webhook
    device (the write also inserts an outbox row and NOTIFYs). Commits are
    spaced 1.1 s apart in both loops, past the device's one-push-a-second
    gap, so no notification waits on coalescing. Returns the save
    latencies (ms) without and with the subscriber, and the milliseconds
    from each commit's HTTP answer to the webhook's arrival."""
    import http.server
    import queue
    import threading

    arrivals = queue.Queue()

    class Hook(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            arrivals.put(time.monotonic())
            self.send_response(204)
            self.end_headers()

        def log_message(self, *_):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    run_id = time.monotonic_ns()
    graphql(token, 'mutation { saveZone(zoneName: "Pushed") { zoneName } }')

    def save(index):
        started = time.monotonic()
        graphql(token, 'mutation { modifyRecords(scope: PRIVATE, zone: {zoneName: "Pushed"}, save: '
                       f'[{{recordName: "p{run_id}_{index}", recordType: "Note", fields: {{n: {index}}}}}]) '
                       '{ saved { recordName } } }')
        answered = time.monotonic()
        return answered, (answered - started) * 1000

    try:
        without = []
        for index in range(commits):
            without.append(save(index)[1])
            time.sleep(1.1)
        device = graphql(token, 'mutation($u: String!) { registerDevice(kind: WEBHOOK, url: $u) { deviceID } }',
                         {"u": f"http://127.0.0.1:{server.server_address[1]}/hook/bench"})["registerDevice"]["deviceID"]
        graphql(token, 'mutation { saveSubscription(subscriptionID: "bench", kind: DATABASE) { subscriptionID } }')
        with_push, delays = [], []
        for index in range(commits, 2 * commits):
            answered, milliseconds = save(index)
            with_push.append(milliseconds)
            try:
                arrived = arrivals.get(timeout=15)
            except queue.Empty:
                sys.exit("push: no webhook arrived within 15 s of a commit (see .bench/serve.log)")
            delays.append((arrived - answered) * 1000)
            time.sleep(1.1)
        graphql(token, 'mutation { deleteSubscription(subscriptionID: "bench") }')
        graphql(token, 'mutation($d: String!) { unregisterDevice(deviceID: $d) }', {"d": device})
    finally:
        server.shutdown()
    return without, with_push, delays
