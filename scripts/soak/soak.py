#!/usr/bin/env python3
"""Canopy's soak (issue 20 part 4): a long run of mixed traffic against `canopy serve`.

Starts its own embedded cluster in --data-dir (wiped and made again: the
directory holds a marker file so that nothing else is ever removed) and a
gateway on 127.0.0.1:--port, adds --users users, and has each of them, in
its own thread, do a weighted random mix for --minutes:

  query       records with a filter and a sort, following the cursor
  lookup      lookup by names (some unknown: UNKNOWN_ITEM is expected there), POST or GET
  modify      modifyRecords batches: creates, updates with recordChangeTag, deletes
  stale       an update with an old recordChangeTag: SERVER_RECORD_CHANGED expected
  feeds       zoneChanges / databaseChanges paged from the last token (now and then from null)
  sharing     a zone-wide share with another simulated user, step by step:
              saveShare, acceptShare and a read as the participant, setParticipant
              READ_ONLY and a refused write, removeParticipant and a refused read,
              deleteShare
  subscribe   a WebSocket (graphql-transport-ws): connection_init with the token,
              zoneChanged or databaseChanged, commits over HTTP and their `next`,
              then complete and close (or close without complete)
  bad         malformed JSON, invalid GraphQL, a bad token (HTTP and WebSocket),
              an unknown zone, another user's zone, a bad filter, a forged change
              token, a mutation by GET, a body over the size limit: each with the
              answer it must get
  misc        me, zones

An unexpected error is an HTTP 5xx, a connection error or time-out, an
HTTP status or error code the request kind does not expect (or a missing
one that it must get), a broken WebSocket exchange, and INTERNAL_ERROR
always. Every 5 s it samples the gateway's RSS (/proc/PID/status), its
threads and open files, the PostgreSQL connections to the database
(pg_stat_activity, through the cluster's socket as its administrator) and
the latencies of that window.

It writes SOAK.md (configuration, totals per kind, errors, the memory
slope after warm-up, connections, p50/p99 per minute) and soak.png (RSS,
connections, p50/p99 over time) to --output-dir, prints a summary line,
and exits 0 only when: no unexpected error; RSS after warm-up grows less
than --max-rss-slope MB/hour (judged over at least --min-slope-minutes
after warm-up) and its last minute is within --max-rss-drift
of its first minute after warm-up; PostgreSQL connections after warm-up
stay at most --max-connections and the second half's most exceeds the
first half's by at most --max-connection-spread; the last third's p99 is at most
--max-p99-ratio times the middle third's.

usage: make soak   (release build; 30 minutes, 20 users)
       python3 scripts/soak/soak.py [--minutes M] [--users N] [--warmup-minutes W]
              [--port P] [--data-dir D] [--output-dir O] [--think-ms T] [--seed S]
The binary is .build/release/canopy unless CANOPY_SOAK_BINARY names another.
Needs Python's websockets (Tests/python/requirements.txt) and matplotlib.
"""
import argparse
import http.client
import json
import math
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import traceback
import urllib.parse
import urllib.request
from collections import Counter, defaultdict
from pathlib import Path

try:
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect as ws_connect
except ImportError:  # pragma: no cover
    sys.exit("soak.py needs websockets >= 11 (python3 -m pip install -r Tests/python/requirements.txt)")

ROOT = Path(__file__).resolve().parents[2]
BINARY = Path(os.environ.get("CANOPY_SOAK_BINARY", ROOT / ".build" / "release" / "canopy"))
MARKER = ".canopy-soak"
SAMPLE_SECONDS = 5.0
HTTP_TIMEOUT = 30.0
WS_TIMEOUT = 10.0
RECORD_TYPE = "SoakItem"
RECORDS_PER_ZONE = 150       # record names per zone: the data set stays bounded
ZONES = ["work-0", "work-1"]
SHARED_ZONE = "shared"
# Answers that contradict API.md but are known (each names its finding). They
# are counted and listed apart in the report, not as unexpected errors, so
# that a soak measures stability; --strict counts them as unexpected.
KNOWN_DEVIATIONS = {
    # (kind, code) pairs that differ from API.md and are documented. None now:
    # a READ_ONLY participant's update *with* the record's change tag was
    # UNKNOWN_ITEM until modify_records.sql told it apart from a missing
    # record (SharingPermissionTests covers it).
}
STRICT = False
WORDS = ["apple", "birch", "cedar", "delta", "ember", "fjord", "grove", "harbor", "iris", "juniper",
         "kelp", "lark", "maple", "north", "olive", "pine", "quartz", "river", "spruce", "tide"]


def say(message):
    print(f"==> {message}", flush=True)


def run(args, **options):
    return subprocess.run([str(a) for a in args], check=True, capture_output=True, text=True, **options).stdout


# ---------------------------------------------------------------- statistics

class Stats:
    """Everything the users and the sampler record, under one lock."""

    def __init__(self):
        self.lock = threading.Lock()
        self.t0 = None
        self.totals = Counter()                 # kind -> requests
        self.expected = defaultdict(Counter)    # kind -> code -> count
        self.unexpected = defaultdict(Counter)  # kind -> description -> count
        self.deviations = defaultdict(Counter)  # kind -> code -> count (KNOWN_DEVIATIONS)
        self.examples = []                      # first unexpected errors in full
        self.latencies = defaultdict(list)      # kind -> [ms]
        self.http = []                          # (seconds since t0, ms) of every HTTP request
        self.window = []                        # ms of HTTP requests since the last sample
        self.samples = []                       # dicts, one per SAMPLE_SECONDS

    def now(self):
        return time.monotonic() - self.t0 if self.t0 is not None else 0.0

    def request(self, kind, ms, http_request=True):
        with self.lock:
            self.totals[kind] += 1
            self.latencies[kind].append(ms)
            if http_request:
                self.http.append((self.now(), ms))
                self.window.append(ms)

    def count(self, kind):
        with self.lock:
            self.totals[kind] += 1

    def expect(self, kind, code):
        with self.lock:
            self.expected[kind][code] += 1

    def deviate(self, kind, code, detail=""):
        with self.lock:
            if not self.deviations[kind]:
                self.examples.append((round(self.now(), 1), kind, f"known deviation {code}", str(detail)[:600]))
            self.deviations[kind][code] += 1

    def fail(self, kind, description, detail=""):
        with self.lock:
            self.unexpected[kind][description] += 1
            if len(self.examples) < 40:
                self.examples.append((round(self.now(), 1), kind, description, str(detail)[:600]))

    def take_window(self):
        with self.lock:
            window, self.window = self.window, []
        return window

    def unexpected_total(self):
        with self.lock:
            return sum(sum(c.values()) for c in self.unexpected.values())


def percentile(values, p):
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = (len(ordered) - 1) * p / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def slope_per_hour(points):
    """Least-squares slope of (seconds, value) points, per hour."""
    if len(points) < 2:
        return 0.0
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return 0.0
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx * 3600.0


# ---------------------------------------------------------------- the server

class Cluster:
    def __init__(self, data_dir):
        self.data_dir = data_dir
        out = run([BINARY, "cluster", "start", "--data-dir", data_dir])
        match = re.search(r"running on port (\d+), socket in (\S+), log (\S+)", out)
        admin = re.search(r"admin: postgres://([^@]+)@", out)
        if not match or not admin:
            sys.exit(f"cannot read the cluster's address from: {out}")
        self.port, self.socket = match.group(1), match.group(2).rstrip(",")
        self.user = admin.group(1)

    def connections(self):
        """Connections to the canopy database other than this query's own:
        (all, the gateway role's)."""
        out = run(["psql", "-X", "-q", "-At", "-h", self.socket, "-p", self.port, "-U", self.user, "-d", "canopy", "-c",
                   "SELECT count(*), count(*) FILTER (WHERE usename = 'canopy_gateway') FROM pg_stat_activity "
                   "WHERE datname = 'canopy' AND pid <> pg_backend_pid()"], timeout=30)
        total, gateway = out.strip().split("|")
        return int(total), int(gateway)

    def stop(self):
        subprocess.run([str(BINARY), "cluster", "stop", "--data-dir", str(self.data_dir)],
                       capture_output=True, text=True, timeout=120)


class Gateway:
    def __init__(self, data_dir, port):
        self.data_dir, self.port = data_dir, port
        self.log_path = data_dir / "serve.log"
        self.process = None
        self.stopped_cleanly = None

    def start(self):
        log = open(self.log_path, "a")
        self.process = subprocess.Popen(
            [str(BINARY), "serve", "--data-dir", str(self.data_dir), "--port", str(self.port),
             "--migrations-dir", str(ROOT / "migrations"), "--rate-limit", "0"],
            stdout=log, stderr=subprocess.STDOUT)
        for _ in range(600):
            if self.process.poll() is not None:
                sys.exit(f"canopy serve exited with {self.process.returncode}; see {self.log_path}")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=1)
                return
            except Exception:
                time.sleep(0.1)
        self.stop()
        sys.exit(f"the gateway did not answer /health within 60 s; see {self.log_path}")

    def status(self):
        """(RSS in MB, threads, open files) of the gateway process."""
        text = Path(f"/proc/{self.process.pid}/status").read_text()
        rss = int(re.search(r"VmRSS:\s+(\d+) kB", text).group(1)) / 1024.0
        threads = int(re.search(r"Threads:\s+(\d+)", text).group(1))
        try:
            files = len(os.listdir(f"/proc/{self.process.pid}/fd"))
        except OSError:
            files = -1
        return rss, threads, files

    def stop(self):
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
            self.stopped_cleanly = True
        except subprocess.TimeoutExpired:
            self.dump_threads()
            self.process.kill()
            self.process.wait()
            self.stopped_cleanly = False

    def dump_threads(self):
        """Every thread's stack, appended to the gateway's log, so a
        gateway that will not stop says where it is stuck."""
        debugger = shutil.which("gdb")
        if debugger is None:
            return
        with open(self.log_path, "a") as log:
            log.write("\n---- SIGTERM not honoured within 30 s: threads (gdb) ----\n")
            log.flush()
            subprocess.run([debugger, "-p", str(self.process.pid), "-batch", "-ex", "thread apply all bt 30"],
                           stdout=log, stderr=subprocess.STDOUT, timeout=120)

    def log_errors(self):
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return []
        return [line for line in lines if re.search(r"\b(error|critical)\b", line)]


# ---------------------------------------------------------------- one simulated user

class Client:
    """One keep-alive HTTP connection to /graphql, classifying every answer."""

    def __init__(self, port, stats):
        self.port, self.stats = port, stats
        self.connection = None
        self.uses = 0
        self.reopen_after = random.randint(50, 300)

    def _connection(self):
        if self.connection is None or self.uses >= self.reopen_after:
            # Now and then a new connection: the accept and close paths are soaked too.
            if self.connection is not None:
                self.connection.close()
            self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=HTTP_TIMEOUT)
            self.uses = 0
            self.reopen_after = random.randint(50, 300)
        self.uses += 1
        return self.connection

    def call(self, kind, token, query=None, variables=None, *, status=200, expect=(), must=None,
             raw=None, method="POST"):
        """Sends one request. `status`: the HTTP status it must get; `expect`:
        error codes that are fine here; `must`: a code that must be among the
        answer's. Returns (data or None, [codes]) — data None on failure."""
        headers = {"Content-Type": "application/json"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        if method == "GET":
            path = "/graphql?" + urllib.parse.urlencode({"query": query, "variables": json.dumps(variables or {})})
            body = None
        else:
            path = "/graphql"
            body = raw if raw is not None else json.dumps({"query": query, "variables": variables or {}})
        started = time.monotonic()
        try:
            connection = self._connection()
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            payload = response.read()
        except Exception as error:  # connection refused or reset, time-out, bad status line
            self.stats.request(kind, (time.monotonic() - started) * 1000.0)
            self.stats.fail(kind, f"connection: {type(error).__name__}", repr(error))
            if self.connection is not None:
                self.connection.close()
            self.connection = None
            return None, []
        self.stats.request(kind, (time.monotonic() - started) * 1000.0)
        if response.status >= 500:
            self.stats.fail(kind, f"HTTP {response.status}", payload[:300])
            return None, []
        try:
            answer = json.loads(payload) if payload else {}
        except ValueError:
            self.stats.fail(kind, f"HTTP {response.status}: not JSON", payload[:300])
            return None, []
        codes = [((e.get("extensions") or {}).get("code") or "NO_CODE") for e in answer.get("errors") or []]
        codes += nested_codes(answer.get("data"))
        bad = False
        if response.status != status:
            self.stats.fail(kind, f"HTTP {response.status}, expected {status}", payload[:300])
            bad = True
        deviated = False
        for code in codes:
            if code in expect and code != "INTERNAL_ERROR":
                self.stats.expect(kind, code)
            elif (kind, code) in KNOWN_DEVIATIONS and not STRICT:
                self.stats.deviate(kind, code, payload[:300])
                deviated = True
            else:
                self.stats.fail(kind, f"code {code}", payload[:300])
                bad = True
        if must is not None and must not in codes and not deviated:
            self.stats.fail(kind, f"no {must}", payload[:300])
            bad = True
        if bad:
            return None, codes
        return (answer.get("data") or {}), codes

    def close(self):
        if self.connection is not None:
            self.connection.close()


def nested_codes(value):
    """Error codes inside data: RecordError.code, LookupResult.error.code."""
    codes = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "code" and isinstance(item, str):
                codes.append(item)
            else:
                codes.extend(nested_codes(item))
    elif isinstance(value, list):
        for item in value:
            codes.extend(nested_codes(item))
    return codes


MODIFY = """mutation($zone: ZoneID!, $scope: DatabaseScope!, $save: [RecordInput!], $delete: [String!]) {
  modifyRecords(scope: $scope, zone: $zone, save: $save, delete: $delete) {
    saved { recordName recordChangeTag } deleted errors { recordName code message }
  }
}"""

QUERY = """query($scope: DatabaseScope!, $zone: ZoneID!, $filter: String, $args: JSON, $sort: [Sort!], $limit: Int, $cursor: String) {
  records(scope: $scope, zone: $zone, recordType: "%s", filter: $filter, args: $args, sort: $sort, limit: $limit, cursor: $cursor) {
    records { recordName recordChangeTag fields modified { timestamp userRecordName } } cursor
  }
}""" % RECORD_TYPE

LOOKUP = """query($scope: DatabaseScope!, $zone: ZoneID!, $names: [String!]!) {
  lookup(scope: $scope, zone: $zone, recordNames: $names) { recordName record { recordChangeTag fields } error { code } }
}"""

ZONE_CHANGES = """query($scope: DatabaseScope!, $zone: ZoneID!, $since: String, $limit: Int) {
  zoneChanges(scope: $scope, zone: $zone, since: $since, limit: $limit) {
    changed { recordName recordChangeTag } deleted { recordName recordType } token moreComing
  }
}"""

DATABASE_CHANGES = """query($scope: DatabaseScope!, $since: String, $limit: Int) {
  databaseChanges(scope: $scope, since: $since, limit: $limit) {
    changedZones { zoneName ownerName } deletedZones { zoneName ownerName } token moreComing
  }
}"""

SHARE_FIELDS = "url publicPermission participants { user { userRecordName } role permission status }"


class User(threading.Thread):
    def __init__(self, index, account, everyone, args, stats, stop, deadline):
        super().__init__(name=f"soak-user-{index}", daemon=True)
        self.index, self.account, self.everyone = index, account, everyone
        self.token, self.me = account["token"], account["userRecordName"]
        self.args, self.stats, self.stop, self.deadline = args, stats, stop, deadline
        self.random = random.Random(args.seed * 1000 + index)
        self.client = Client(args.port, stats)
        self.tags = {zone: {} for zone in ZONES + [SHARED_ZONE]}   # zone -> recordName -> recordChangeTag
        self.zone_tokens = {}
        self.database_tokens = {}
        self.share = None   # {"url", "partner", "stage"}
        self.actions = [
            (self.query, 20), (self.lookup, 12), (self.modify, 16), (self.stale_update, 2),
            (self.zone_changes, 10), (self.database_changes, 6), (self.sharing, 7),
            (self.subscription, 4), (self.bad_request, 6), (self.misc, 3),
        ]
        self.crashed = None

    # -- helpers

    def fields(self):
        r = self.random
        return {
            "n": r.randint(0, 999),
            "title": " ".join(r.sample(WORDS, 3)),
            "when": {"type": "TIMESTAMP", "value": 1_700_000_000_000 + r.randint(0, 10_000_000) * 1000},
            "done": r.random() < 0.5,
        }

    def name(self):
        return f"r{self.random.randrange(RECORDS_PER_ZONE):03d}"

    def apply_modify(self, zone, data):
        result = data["modifyRecords"]
        for saved in result["saved"]:
            self.tags[zone][saved["recordName"]] = saved["recordChangeTag"]
        for name in result["deleted"]:
            self.tags[zone].pop(name, None)

    def save(self, zone, records, kind="modify", deletes=(), token=None, scope="PRIVATE", owner=None,
             expect=(), must=None):
        zone_id = {"zoneName": zone} if owner is None else {"zoneName": zone, "ownerName": owner}
        data, _ = self.client.call(kind, token or self.token, MODIFY,
                                   {"zone": zone_id, "scope": scope, "save": records, "delete": list(deletes)},
                                   expect=expect, must=must)
        if data and must is None:
            self.apply_modify(zone, data)
        return data

    def record_input(self, zone, name):
        record = {"recordName": name, "recordType": RECORD_TYPE, "fields": self.fields()}
        if name in self.tags[zone]:
            record["recordChangeTag"] = self.tags[zone][name]
        return record

    # -- setup

    def setup(self):
        for zone in ZONES + [SHARED_ZONE]:
            self.client.call("setup", self.token, "mutation($z: String!) { saveZone(zoneName: $z) { zoneName } }",
                             {"z": zone})
            names = [f"r{i:03d}" for i in range(0, RECORDS_PER_ZONE, 2)]
            for start in range(0, len(names), 25):
                self.save(zone, [self.record_input(zone, n) for n in names[start:start + 25]], kind="setup")

    # -- the mix

    def run(self):
        try:
            weights = [w for _, w in self.actions]
            while not self.stop.is_set() and time.monotonic() < self.deadline:
                action = self.random.choices([a for a, _ in self.actions], weights)[0]
                action()
                pause = min(self.random.expovariate(1000.0 / self.args.think_ms), 10 * self.args.think_ms / 1000.0)
                self.stop.wait(pause)
        except Exception:
            self.crashed = traceback.format_exc()
            self.stats.fail("client", "soak client crashed", self.crashed)
        finally:
            self.client.close()

    def query(self):
        r = self.random
        zone = r.choice(ZONES + [SHARED_ZONE])
        shape = r.random()
        if shape < 0.5:
            low = r.randint(0, 800)
            filter_, args = "n >= %@ AND n < %@", [low, low + r.randint(50, 400)]
            sort = [{"field": "n", "direction": r.choice(["ASC", "DESC"])}]
        elif shape < 0.75:
            filter_, args = "when > $after AND done == $done", {"after": 1_700_000_000_000 + r.randint(0, 9_000_000) * 1000,
                                                                 "done": r.random() < 0.5}
            sort = [{"field": "when", "direction": "DESC"}]
        elif shape < 0.9:
            filter_, args = "self CONTAINS %@", [r.choice(WORDS)]
            sort = [{"field": "n"}]
        else:
            filter_, args, sort = None, None, None
        variables = {"scope": "PRIVATE", "zone": {"zoneName": zone}, "filter": filter_, "args": args, "sort": sort,
                     "limit": r.randint(5, 40), "cursor": None}
        for _ in range(r.randint(1, 4)):
            data, _ = self.client.call("query", self.token, QUERY, variables)
            if not data or not data["records"]["cursor"]:
                return
            variables["cursor"] = data["records"]["cursor"]

    def lookup(self):
        r = self.random
        zone = r.choice(ZONES + [SHARED_ZONE])
        names = sorted({self.name() for _ in range(r.randint(1, 12))})
        method = "GET" if r.random() < 0.3 else "POST"
        self.client.call("lookup", self.token, LOOKUP, {"scope": "PRIVATE", "zone": {"zoneName": zone}, "names": names},
                         expect=("UNKNOWN_ITEM",), method=method)

    def modify(self):
        r = self.random
        zone = r.choice(ZONES + [SHARED_ZONE])
        saves, deletes, chosen = [], [], set()
        for _ in range(r.randint(1, 20)):
            name = self.name()
            if name in chosen:
                continue
            chosen.add(name)
            if name in self.tags[zone] and r.random() < 0.3:
                deletes.append(name)
            else:
                saves.append(self.record_input(zone, name))
        self.save(zone, saves, deletes=deletes)

    def stale_update(self):
        zone = self.random.choice(ZONES)
        if not self.tags[zone]:
            return
        name = self.random.choice(sorted(self.tags[zone]))
        old = self.record_input(zone, name)
        if not self.save(zone, [dict(old, fields=self.fields())]):
            return
        # The old tag again: the server's record has moved on.
        self.save(zone, [old], kind="stale", expect=("SERVER_RECORD_CHANGED",), must="SERVER_RECORD_CHANGED")

    def zone_changes(self):
        r = self.random
        zone = r.choice(ZONES + [SHARED_ZONE])
        since = None if r.random() < 0.1 else self.zone_tokens.get(zone)
        for _ in range(20):
            data, _ = self.client.call("zoneChanges", self.token, ZONE_CHANGES,
                                       {"scope": "PRIVATE", "zone": {"zoneName": zone}, "since": since,
                                        "limit": r.choice([25, 50, 100, 200])})
            if not data:
                return
            since = data["zoneChanges"]["token"]
            self.zone_tokens[zone] = since
            if not data["zoneChanges"]["moreComing"]:
                return

    def database_changes(self):
        r = self.random
        scope = r.choice(["PRIVATE", "SHARED"])
        since = None if r.random() < 0.1 else self.database_tokens.get(scope)
        for _ in range(20):
            data, _ = self.client.call("databaseChanges", self.token, DATABASE_CHANGES,
                                       {"scope": scope, "since": since, "limit": r.choice([10, 50, 200])})
            if not data:
                return
            since = data["databaseChanges"]["token"]
            self.database_tokens[scope] = since
            if not data["databaseChanges"]["moreComing"]:
                return

    def sharing(self):
        """One step of a zone-wide share's life, with another user as the participant."""
        if self.share is None:
            partner = self.random.choice([u for u in self.everyone if u["userRecordName"] != self.me])
            data, _ = self.client.call(
                "share.save", self.token,
                "mutation($z: String!, $t: String, $p: [ParticipantInput!]) { saveShare(zoneName: $z, title: $t, participants: $p) { %s } }" % SHARE_FIELDS,
                {"z": SHARED_ZONE, "t": f"soak {self.index}",
                 "p": [{"userRecordName": partner["userRecordName"], "permission": "READ_WRITE"}]})
            if data:
                self.share = {"url": data["saveShare"]["url"], "partner": partner, "stage": 1}
            return
        partner, stage = self.share["partner"], self.share["stage"]
        owner_zone = {"zoneName": SHARED_ZONE, "ownerName": self.me}
        if stage == 1:
            self.client.call("share.metadata", partner["token"],
                             "query($u: String!) { shareMetadata(url: $u) { ownerName permission status } }",
                             {"u": self.share["url"]})
            data, _ = self.client.call("share.accept", partner["token"],
                                       "mutation($u: String!) { acceptShare(url: $u) { status permission } }",
                                       {"u": self.share["url"]})
            if data:
                self.client.call("share.read", partner["token"], QUERY,
                                 {"scope": "SHARED", "zone": owner_zone, "limit": 20, "sort": [{"field": "n"}]})
                # The participant writes (READ_WRITE); the record is the owner's.
                name = self.name()
                self.save(SHARED_ZONE, [self.record_input(SHARED_ZONE, name)], kind="share.write",
                          token=partner["token"], scope="SHARED", owner=self.me)
        elif stage == 2:
            self.client.call("share.setParticipant", self.token,
                             "mutation($z: String!, $p: ParticipantInput!) { setParticipant(zoneName: $z, participant: $p) { %s } }" % SHARE_FIELDS,
                             {"z": SHARED_ZONE, "p": {"userRecordName": partner["userRecordName"], "permission": "READ_ONLY"}})
            # Refused now: a new record, and an update with the record's tag.
            tags = self.tags[SHARED_ZONE]
            fresh = [f"r{i:03d}" for i in range(RECORDS_PER_ZONE) if f"r{i:03d}" not in tags]
            if fresh:
                self.save(SHARED_ZONE, [self.record_input(SHARED_ZONE, self.random.choice(fresh))],
                          kind="share.refusedCreate", token=partner["token"], scope="SHARED", owner=self.me,
                          expect=("PERMISSION_FAILURE",), must="PERMISSION_FAILURE")
            if tags:
                self.save(SHARED_ZONE, [self.record_input(SHARED_ZONE, self.random.choice(sorted(tags)))],
                          kind="share.refusedUpdate", token=partner["token"], scope="SHARED", owner=self.me,
                          expect=("PERMISSION_FAILURE",), must="PERMISSION_FAILURE")
            self.client.call("share.lookup", partner["token"], LOOKUP,
                             {"scope": "SHARED", "zone": owner_zone, "names": [self.name(), self.name()]},
                             expect=("UNKNOWN_ITEM",))
        elif stage == 3:
            self.client.call("share.removeParticipant", self.token,
                             "mutation($z: String!, $u: String) { removeParticipant(zoneName: $z, userRecordName: $u) { %s } }" % SHARE_FIELDS,
                             {"z": SHARED_ZONE, "u": partner["userRecordName"]})
            self.client.call("share.refusedRead", partner["token"], QUERY, {"scope": "SHARED", "zone": owner_zone},
                             expect=("ZONE_NOT_FOUND",), must="ZONE_NOT_FOUND")
        else:
            self.client.call("share.delete", self.token, "mutation($z: String!) { deleteShare(zoneName: $z) }",
                             {"z": SHARED_ZONE})
            self.share = None
            return
        self.share["stage"] += 1

    def subscription(self):
        """A WebSocket: init, one subscription, commits and their `next`, then
        complete and close (or, now and then, close without complete)."""
        r = self.random
        zone = r.choice(ZONES)
        database = r.random() < 0.35
        started = time.monotonic()
        try:
            with ws_connect(f"ws://127.0.0.1:{self.args.port}/graphql", subprotocols=["graphql-transport-ws"],
                            open_timeout=WS_TIMEOUT, close_timeout=WS_TIMEOUT) as ws:
                ws.send(json.dumps({"type": "connection_init", "payload": {"Authorization": f"Bearer {self.token}"}}))
                ack = json.loads(ws.recv(timeout=WS_TIMEOUT))
                self.stats.request("ws.open", (time.monotonic() - started) * 1000.0, http_request=False)
                if ack.get("type") != "connection_ack":
                    self.stats.fail("ws.open", f"no connection_ack: {ack.get('type')}", ack)
                    return
                if database:
                    query = "subscription { databaseChanged(scope: PRIVATE) { changedZones { zoneName } token } }"
                else:
                    query = ('subscription($z: ZoneID!) { zoneChanged(scope: PRIVATE, zone: $z) '
                             '{ changed { recordName recordChangeTag } deleted { recordName } token } }')
                ws.send(json.dumps({"id": "s1", "type": "subscribe",
                                    "payload": {"query": query, "variables": {"z": {"zoneName": zone}}}}))
                if database and not self.await_next(ws, database, zone, None, time.monotonic(), kind="ws.first"):
                    return   # from null, the first page lists every zone at once
                for _ in range(r.randint(1, 3)):
                    name = self.name()
                    if not self.save(zone, [self.record_input(zone, name)], kind="ws.commit"):
                        return
                    committed = time.monotonic()
                    # The page that holds this very version (the first pages of
                    # a zone feed from null hold the zone as it was).
                    if not self.await_next(ws, database, zone, (name, self.tags[zone].get(name)), committed):
                        return
                if r.random() < 0.75:
                    ws.send(json.dumps({"id": "s1", "type": "complete"}))
                    ws.close()
                    self.stats.count("ws.close")
                else:
                    self.stats.count("ws.drop")
                    # the with block's close: no complete first
        except ConnectionClosed as error:
            self.stats.fail("ws", f"socket closed: {error.rcvd.code if error.rcvd else 'no close frame'}", error)
        except (OSError, TimeoutError) as error:
            self.stats.fail("ws", f"connection: {type(error).__name__}", repr(error))
        except Exception as error:  # websockets' InvalidStatus, InvalidHandshake…
            self.stats.fail("ws", f"handshake: {type(error).__name__}", repr(error))

    def await_next(self, ws, database, zone, version, committed, kind="ws.notify"):
        """Reads messages until a `next` shows `zone` changed (database feed)
        or `version` = (recordName, recordChangeTag) among the changes."""
        deadline = committed + WS_TIMEOUT
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.stats.fail(kind, f"no next within {WS_TIMEOUT:g} s", f"{zone} {version}")
                return False
            try:
                message = json.loads(ws.recv(timeout=left))
            except TimeoutError:
                continue
            if message.get("type") == "ping":
                ws.send(json.dumps({"type": "pong"}))
                continue
            if message.get("type") != "next":
                self.stats.fail(kind, f"message {message.get('type')}", message)
                return False
            payload = message["payload"]
            if payload.get("errors"):
                self.stats.fail(kind, "next with errors", payload)
                return False
            data = payload["data"]
            if database:
                seen = any(z["zoneName"] == zone for z in data["databaseChanged"]["changedZones"])
            else:
                seen = any((c["recordName"], c["recordChangeTag"]) == version for c in data["zoneChanged"]["changed"])
            if seen:
                self.stats.request(kind, (time.monotonic() - committed) * 1000.0, http_request=False)
                return True

    def bad_request(self):
        r = self.random
        other = r.choice([u for u in self.everyone if u["userRecordName"] != self.me])
        kind = r.choice(["malformedJSON", "invalidGraphQL", "syntaxError", "badToken", "unknownZone",
                         "strangersZone", "badFilter", "forgedToken", "mutationByGET", "wsBadToken", "tooLarge"])
        c = self.client
        if kind == "malformedJSON":
            c.call("bad.malformedJSON", self.token, raw='{"query": "{ me { userRecordName } ',
                   status=400, expect=("BAD_REQUEST",), must="BAD_REQUEST")
        elif kind == "invalidGraphQL":
            c.call("bad.invalidGraphQL", self.token, "{ me { nope } }", status=400, expect=("BAD_REQUEST",),
                   must="BAD_REQUEST")
        elif kind == "syntaxError":
            c.call("bad.syntaxError", self.token, "query { records(scope: PRIVATE", status=400,
                   expect=("BAD_REQUEST",), must="BAD_REQUEST")
        elif kind == "badToken":
            c.call("bad.token", "cnp_0123456789abcdef_" + "x" * 43, "{ me { userRecordName } }", status=401,
                   expect=("NOT_AUTHENTICATED",), must="NOT_AUTHENTICATED")
        elif kind == "unknownZone":
            c.call("bad.unknownZone", self.token, QUERY, {"scope": "PRIVATE", "zone": {"zoneName": f"nozone-{r.randrange(1000)}"}},
                   expect=("ZONE_NOT_FOUND",), must="ZONE_NOT_FOUND")
        elif kind == "strangersZone":
            # Another user's private zone, never shared with us: as if it did not exist.
            c.call("bad.strangersZone", self.token, LOOKUP,
                   {"scope": "SHARED", "zone": {"zoneName": ZONES[0], "ownerName": other["userRecordName"]}, "names": ["r000"]},
                   expect=("ZONE_NOT_FOUND",), must="ZONE_NOT_FOUND")
        elif kind == "badFilter":
            c.call("bad.filter", self.token, QUERY,
                   {"scope": "PRIVATE", "zone": {"zoneName": ZONES[0]}, "filter": "n >>> 3 AND"},
                   expect=("INVALID_ARGUMENTS",), must="INVALID_ARGUMENTS")
        elif kind == "forgedToken":
            c.call("bad.changeToken", self.token, ZONE_CHANGES,
                   {"scope": "PRIVATE", "zone": {"zoneName": ZONES[0]}, "since": "ct2.forged" + "A" * r.randint(0, 60)},
                   expect=("INVALID_ARGUMENTS",), must="INVALID_ARGUMENTS")
        elif kind == "mutationByGET":
            c.call("bad.mutationByGET", self.token, 'mutation { saveZone(zoneName: "work-0") { zoneName } }',
                   method="GET", status=400, expect=("BAD_REQUEST",), must="BAD_REQUEST")
        elif kind == "tooLarge":
            body = json.dumps({"query": "{ me { userRecordName } }", "variables": {"pad": "x" * (2 * 1024 * 1024 + 64)}})
            c.call("bad.tooLarge", self.token, raw=body, status=413, expect=("LIMIT_EXCEEDED",), must="LIMIT_EXCEEDED")
        else:
            self.bad_socket()

    def bad_socket(self):
        started = time.monotonic()
        try:
            with ws_connect(f"ws://127.0.0.1:{self.args.port}/graphql", subprotocols=["graphql-transport-ws"],
                            open_timeout=WS_TIMEOUT, close_timeout=WS_TIMEOUT) as ws:
                ws.send(json.dumps({"type": "connection_init", "payload": {"Authorization": "Bearer cnp_nobody"}}))
                try:
                    message = ws.recv(timeout=WS_TIMEOUT)
                    self.stats.request("bad.wsToken", (time.monotonic() - started) * 1000.0, http_request=False)
                    self.stats.fail("bad.wsToken", "answered instead of closed with 4403", message)
                except ConnectionClosed as error:
                    self.stats.request("bad.wsToken", (time.monotonic() - started) * 1000.0, http_request=False)
                    code = error.rcvd.code if error.rcvd else None
                    if code == 4403:
                        self.stats.expect("bad.wsToken", "close 4403")
                    else:
                        self.stats.fail("bad.wsToken", f"closed with {code}, expected 4403", error)
        except Exception as error:
            self.stats.fail("bad.wsToken", f"connection: {type(error).__name__}", repr(error))

    def misc(self):
        if self.random.random() < 0.5:
            self.client.call("me", self.token, "{ me { userRecordName name } }", method=self.random.choice(["GET", "POST"]))
        else:
            self.client.call("zones", self.token, "query($s: DatabaseScope!) { zones(scope: $s) { zoneName ownerName share { url } } }",
                             {"s": self.random.choice(["PRIVATE", "SHARED"])})


# ---------------------------------------------------------------- sampling

class Sampler(threading.Thread):
    def __init__(self, gateway, cluster, stats, stop):
        super().__init__(name="soak-sampler", daemon=True)
        self.gateway, self.cluster, self.stats, self.stop = gateway, cluster, stats, stop

    def sample(self):
        window = self.stats.take_window()
        try:
            rss, threads, files = self.gateway.status()
        except (OSError, AttributeError):
            rss, threads, files = float("nan"), -1, -1
        try:
            connections, gateway_connections = self.cluster.connections()
        except Exception as error:
            connections, gateway_connections = -1, -1
            self.stats.fail("sampler", "psql failed", error)
        sample = {"t": self.stats.now(), "rss": rss, "threads": threads, "files": files,
                  "connections": connections, "gateway_connections": gateway_connections,
                  "requests": len(window), "p50": percentile(window, 50), "p99": percentile(window, 99)}
        with self.stats.lock:
            self.stats.samples.append(sample)
        return sample

    def run(self):
        next_at = time.monotonic() + SAMPLE_SECONDS
        last_print = 0.0
        while not self.stop.wait(max(0.0, next_at - time.monotonic())):
            next_at += SAMPLE_SECONDS
            s = self.sample()
            if s["t"] - last_print >= 60 - SAMPLE_SECONDS / 2:
                last_print = s["t"]
                say(f"{s['t'] / 60:5.1f} min: RSS {s['rss']:.1f} MB, {s['connections']} PG connections, "
                    f"{s['requests'] / SAMPLE_SECONDS:.0f} req/s, p50 {s['p50']:.1f} ms, p99 {s['p99']:.1f} ms, "
                    f"{self.stats.unexpected_total()} unexpected errors")


# ---------------------------------------------------------------- analysis, report, plot

def analyse(args, stats, duration):
    warm = args.warmup_minutes * 60.0
    after = [s for s in stats.samples if s["t"] >= warm and not math.isnan(s["rss"])]
    result = {"duration": duration, "warmup": warm, "checks": []}
    unexpected = stats.unexpected_total()
    result["unexpected"] = unexpected
    result["checks"].append(("no unexpected errors", unexpected == 0, f"{unexpected} unexpected"))

    if len(after) >= 2:
        slope = slope_per_hour([(s["t"], s["rss"]) for s in after])
        first = [s["rss"] for s in after if s["t"] < warm + 60] or [after[0]["rss"]]
        last = [s["rss"] for s in after if s["t"] >= after[-1]["t"] - 60] or [after[-1]["rss"]]
        first_rss, last_rss = statistics.fmean(first), statistics.fmean(last)
        drift = (last_rss - first_rss) / first_rss
        result.update(slope=slope, first_rss=first_rss, last_rss=last_rss, drift=drift,
                      peak_rss=max(s["rss"] for s in stats.samples if not math.isnan(s["rss"])))
        span = (after[-1]["t"] - after[0]["t"]) / 60.0
        if span >= args.min_slope_minutes:
            result["checks"].append((f"RSS slope after warm-up < {args.max_rss_slope:g} MB/hour",
                                     slope < args.max_rss_slope, f"{slope:+.1f} MB/hour"))
        else:
            # A few hundred kB of allocator noise over two minutes makes tens
            # of MB an hour: too short a span to extrapolate, so not judged.
            result["checks"].append((f"RSS slope after warm-up < {args.max_rss_slope:g} MB/hour", None,
                                     f"{slope:+.1f} MB/hour over {span:.1f} min: not judged under "
                                     f"{args.min_slope_minutes:g} min after warm-up"))
        result["checks"].append((f"last minute's RSS within {args.max_rss_drift:.0%} of the first after warm-up",
                                 abs(drift) <= args.max_rss_drift,
                                 f"{first_rss:.1f} MB -> {last_rss:.1f} MB ({drift:+.1%})"))
        connections = [s["connections"] for s in after if s["connections"] >= 0]
        if connections:
            # The pool opens connections under load and closes idle ones, so
            # the count moves; stable means bounded and not creeping upward.
            result.update(conn_min=min(connections), conn_max=max(connections))
            span = (after[-1]["t"] - after[0]["t"]) / 2.0
            middle_max = max([s["connections"] for s in after if s["t"] < after[0]["t"] + span and s["connections"] >= 0] or [0])
            last_max = max([s["connections"] for s in after if s["t"] >= after[0]["t"] + span and s["connections"] >= 0] or [0])
            result["checks"].append((f"PostgreSQL connections after warm-up stay <= {args.max_connections}",
                                     max(connections) <= args.max_connections,
                                     f"min {min(connections)}, max {max(connections)}"))
            result["checks"].append((f"the second half's most connections exceed the first half's by <= {args.max_connection_spread}",
                                     last_max - middle_max <= args.max_connection_spread,
                                     f"{middle_max} -> {last_max}"))
        else:
            result["checks"].append(("PostgreSQL connections sampled", False, "no sample"))
        threads = [s["threads"] for s in after]
        files = [s["files"] for s in after]
        result.update(threads=(min(threads), max(threads)), files=(min(files), max(files)))
    else:
        result["checks"].append(("samples after warm-up", False, f"{len(after)} samples: run longer than the warm-up"))

    third = duration / 3.0
    middle = [ms for t, ms in stats.http if third <= t < 2 * third]
    last = [ms for t, ms in stats.http if t >= 2 * third]
    p99_middle, p99_last = percentile(middle, 99), percentile(last, 99)
    result.update(p99_middle=p99_middle, p99_last=p99_last)
    if middle and last:
        result["checks"].append((f"p99 of the last third <= {args.max_p99_ratio:g} x the middle third's",
                                 p99_last <= args.max_p99_ratio * p99_middle,
                                 f"{p99_middle:.1f} ms -> {p99_last:.1f} ms"))
    else:
        result["checks"].append(("requests in the middle and last thirds", False, "none"))
    result["passed"] = all(ok is not False for _, ok, _ in result["checks"])
    return result


def per_minute(stats, duration):
    minutes = defaultdict(list)
    last = max(0.0, duration - 1e-6)
    for t, ms in stats.http:   # requests in flight at the end finish a little after it
        minutes[int(min(t, last) // 60)].append(ms)
    samples = defaultdict(list)
    for s in stats.samples:
        # The last sample, taken as the run ends, belongs to its last minute.
        samples[int(min(max(0.0, s["t"]), last) // 60)].append(s)
    rows = []
    for minute in sorted(set(minutes) | set(samples)):
        values, ss = minutes.get(minute, []), samples.get(minute, [])
        rss = [s["rss"] for s in ss if not math.isnan(s["rss"])]
        conns = [s["connections"] for s in ss if s["connections"] >= 0]
        rows.append((minute, len(values), percentile(values, 50), percentile(values, 99),
                     statistics.fmean(rss) if rss else float("nan"),
                     f"{min(conns)}–{max(conns)}" if conns else "–"))
    return rows


def write_report(path, args, stats, result, gateway, log_errors, plot_name):
    lines = []
    add = lines.append
    add("# Soak (issue 20 part 4)")
    add("")
    add(f"Written by `scripts/soak/soak.py` ({'`make soak`' if args.minutes == 30 else 'a shorter run'}) on "
        f"{time.strftime('%Y-%m-%d %H:%M %Z')}: **{'PASSED' if result['passed'] else 'FAILED'}**.")
    add("")
    add(f"![RSS, PostgreSQL connections and latency over time]({plot_name})")
    add("")
    add("## Configuration")
    add("")
    add("| setting | value |")
    add("|---|---|")
    add(f"| binary | `{BINARY}` |")
    add(f"| duration | {result['duration'] / 60:.1f} minutes ({args.minutes:g} asked), warm-up {args.warmup_minutes:g} minutes |")
    add(f"| simulated users | {args.users}, one thread each, think time exponential with mean {args.think_ms:g} ms |")
    add(f"| gateway | `canopy serve --rate-limit 0` on 127.0.0.1:{args.port}, embedded cluster in `{args.data_dir}` |")
    add(f"| data | {len(ZONES) + 1} zones per user, record names bounded at {RECORDS_PER_ZONE} a zone |")
    add(f"| sampling | every {SAMPLE_SECONDS:g} s: gateway VmRSS, threads, open files; connections to `canopy` in pg_stat_activity |")
    add(f"| seed | {args.seed} |")
    add("")
    add("## Checks")
    add("")
    add("| check | result | measured |")
    add("|---|---|---|")
    for name, ok, measured in result["checks"]:
        add(f"| {name} | {'not judged' if ok is None else 'pass' if ok else '**FAIL**'} | {measured} |")
    add("")
    if "slope" in result:
        add(f"Gateway RSS: first minute after warm-up {result['first_rss']:.1f} MB, last minute {result['last_rss']:.1f} MB "
            f"({result['drift']:+.1%}), least-squares slope after warm-up {result['slope']:+.1f} MB/hour, peak "
            f"{result['peak_rss']:.1f} MB. PostgreSQL connections after warm-up: min {result.get('conn_min')}, max "
            f"{result.get('conn_max')}. Gateway threads {result['threads'][0]}–{result['threads'][1]}, open files "
            f"{result['files'][0]}–{result['files'][1]}. p99 middle third {result['p99_middle']:.1f} ms, last third "
            f"{result['p99_last']:.1f} ms.")
        add("")
    add(f"The gateway {'stopped on SIGTERM' if gateway.stopped_cleanly else 'did NOT stop within 30 s of SIGTERM (killed)'}; "
        f"its log holds {len(log_errors)} error lines.")
    add("")
    add("## Requests by kind")
    add("")
    add("| kind | requests | p50 ms | p99 ms | expected errors | unexpected errors |")
    add("|---|---:|---:|---:|---|---|")
    for kind in sorted(set(stats.totals) | set(stats.unexpected)):
        values = stats.latencies.get(kind, [])
        p50, p99 = (f"{percentile(values, 50):.1f}", f"{percentile(values, 99):.1f}") if values else ("–", "–")
        expected = ", ".join(f"{code} {n}" for code, n in sorted(stats.expected.get(kind, {}).items())) or ""
        unexpected = ", ".join(f"{d} {n}" for d, n in sorted(stats.unexpected.get(kind, {}).items())) or ""
        add(f"| {kind} | {stats.totals.get(kind, 0)} | {p50} | {p99} | "
            f"{expected} | {unexpected} |")
    total = sum(stats.totals.values())
    add(f"| **all** | {total} | | | {sum(sum(c.values()) for c in stats.expected.values())} | {result['unexpected']} |")
    add("")
    if stats.deviations:
        add("## Known deviations from API.md")
        add("")
        add("Answers the contract does not allow but that are known (`KNOWN_DEVIATIONS` in `scripts/soak/soak.py`, "
            "which says why); not counted as unexpected errors (`--strict` counts them).")
        add("")
        add("| kind | code | count |")
        add("|---|---|---:|")
        for kind, codes in sorted(stats.deviations.items()):
            for code, n in sorted(codes.items()):
                add(f"| {kind} | {code} | {n} |")
        add("")
    add("`ws.open` is the WebSocket upgrade to `connection_ack`; `ws.notify` the time from a commit's HTTP answer "
        "to the subscriber's `next`; `ws.close`/`ws.drop` count sockets closed after `complete` or without it. "
        "`share.*` and `bad.*` are the sharing steps and the deliberately bad requests; their expected codes are listed.")
    add("")
    if stats.examples:
        add("## First unexpected errors and known deviations")
        add("")
        for t, kind, description, detail in stats.examples:
            add(f"- {t} s, {kind}: {description}: `{detail.replace('`', chr(39))[:300]}`")
        add("")
    if log_errors:
        add("## Gateway log: error lines (first 10)")
        add("")
        add("```")
        lines.extend(line[:300] for line in log_errors[:10])
        add("```")
        add("")
    add("## Per minute (HTTP requests)")
    add("")
    add("| minute | requests | p50 ms | p99 ms | RSS MB | PG connections |")
    add("|---:|---:|---:|---:|---:|---|")
    for minute, count, p50, p99, rss, conns in per_minute(stats, result["duration"]):
        warm = " (warm-up)" if minute < args.warmup_minutes else ""
        add(f"| {minute}{warm} | {count} | {p50:.1f} | {p99:.1f} | {rss:.1f} | {conns} |")
    add("")
    path.write_text("\n".join(lines) + "\n")


def plot(path, args, stats, result):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    samples = stats.samples
    minutes = [s["t"] / 60 for s in samples]
    figure, (rss_axis, conn_axis, latency_axis) = plt.subplots(3, 1, figsize=(10, 9), sharex=True)
    rss_axis.plot(minutes, [s["rss"] for s in samples], color="tab:blue", label="gateway RSS")
    if "slope" in result:
        warm = args.warmup_minutes
        xs = [m for m in minutes if m >= warm]
        after = [s for s in samples if s["t"] / 60 >= warm]
        if len(after) >= 2:
            mx = statistics.fmean([s["t"] for s in after])
            my = statistics.fmean([s["rss"] for s in after])
            slope = result["slope"] / 3600.0
            rss_axis.plot(xs, [my + slope * (m * 60 - mx) for m in xs], "--", color="tab:red",
                          label=f"fit after warm-up: {result['slope']:+.1f} MB/hour")
    rss_axis.set_ylabel("RSS (MB)")
    rss_axis.legend(loc="lower right")
    conn_axis.step(minutes, [s["connections"] for s in samples], where="post", color="tab:green", label="all")
    conn_axis.step(minutes, [s["gateway_connections"] for s in samples], where="post", color="tab:olive",
                   linestyle=":", label="canopy_gateway")
    conn_axis.set_ylabel("PostgreSQL connections")
    conn_axis.legend(loc="lower right")
    latency_axis.plot(minutes, [s["p50"] for s in samples], color="tab:purple", label="p50")
    latency_axis.plot(minutes, [s["p99"] for s in samples], color="tab:orange", label="p99")
    latency_axis.set_ylabel(f"latency per {SAMPLE_SECONDS:g} s (ms)")
    latency_axis.set_xlabel("minutes")
    latency_axis.legend(loc="upper right")
    for axis in (rss_axis, conn_axis, latency_axis):
        axis.axvspan(0, args.warmup_minutes, color="0.9", zorder=0)
        axis.grid(alpha=0.3)
        axis.set_ylim(bottom=0)
    figure.suptitle(f"Canopy soak: {args.users} users, {result['duration'] / 60:.1f} min "
                    f"(warm-up shaded), {'passed' if result['passed'] else 'FAILED'}")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


# ---------------------------------------------------------------- main

def prepare_data_dir(data_dir):
    if data_dir.exists():
        if not (data_dir / MARKER).exists() and any(data_dir.iterdir()):
            sys.exit(f"{data_dir} exists and is not a soak's data directory (no {MARKER}); choose another --data-dir")
        subprocess.run([str(BINARY), "cluster", "stop", "--data-dir", str(data_dir)], capture_output=True, timeout=120)
        shutil.rmtree(data_dir)
    data_dir.mkdir(parents=True)
    (data_dir / MARKER).write_text("made by scripts/soak/soak.py; removed by the next soak\n")
    os.chmod(data_dir, 0o755)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--warmup-minutes", type=float, default=5.0)
    parser.add_argument("--port", type=int, default=18280)
    parser.add_argument("--data-dir", type=Path, default=ROOT / ".soak")
    parser.add_argument("--output-dir", type=Path, default=ROOT / "docs" / "soak")
    parser.add_argument("--think-ms", type=float, default=100.0, help="mean pause between a user's actions")
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument("--max-rss-slope", type=float, default=20.0, help="MB/hour after warm-up")
    parser.add_argument("--max-rss-drift", type=float, default=0.15, help="last vs first minute after warm-up")
    parser.add_argument("--min-slope-minutes", type=float, default=10.0,
                        help="judge the RSS slope only over at least this many minutes after warm-up")
    parser.add_argument("--max-connections", type=int, default=25,
                        help="PostgreSQL connections after warm-up (the gateway's pool holds 20, plus its listener)")
    parser.add_argument("--max-connection-spread", type=int, default=2,
                        help="how far the second half's most connections may exceed the first half's")
    parser.add_argument("--max-p99-ratio", type=float, default=2.0)
    parser.add_argument("--strict", action="store_true", help="count KNOWN_DEVIATIONS as unexpected errors")
    args = parser.parse_args()
    global STRICT
    STRICT = args.strict
    if args.users < 2:
        sys.exit("--users must be at least 2 (shares need a participant)")
    if args.warmup_minutes >= args.minutes:
        sys.exit("--warmup-minutes must be less than --minutes")
    if not BINARY.exists():
        sys.exit(f"{BINARY} does not exist: build it (swift build -c release --product canopy) or set CANOPY_SOAK_BINARY")
    try:
        import matplotlib  # noqa: F401  (checked now, not after 30 minutes)
    except ImportError:
        sys.exit("soak.py needs matplotlib for its plot: python3 -m pip install matplotlib")
    args.data_dir = args.data_dir.resolve()
    args.output_dir = args.output_dir.resolve()
    random.seed(args.seed)

    prepare_data_dir(args.data_dir)
    say(f"cluster in {args.data_dir}")
    cluster = Cluster(args.data_dir)
    gateway = Gateway(args.data_dir, args.port)
    stats = Stats()
    stop = threading.Event()
    interrupted = False
    try:
        gateway.start()
        say(f"canopy serve (pid {gateway.process.pid}) on 127.0.0.1:{args.port}; adding {args.users} users")
        accounts = [json.loads(run([BINARY, "users", "add", f"soak-{i:02d}", "--email", f"soak-{i:02d}@example.com",
                                    "--json", "--data-dir", args.data_dir]))
                    for i in range(args.users)]
        stats.t0 = time.monotonic()   # setup's requests count in the warm-up
        deadline = stats.t0 + args.minutes * 60.0
        users = [User(i, account, accounts, args, stats, stop, deadline) for i, account in enumerate(accounts)]
        sampler = Sampler(gateway, cluster, stats, stop)
        sampler.start()
        for user in users:
            user.setup()
        say(f"seeded {len(ZONES) + 1} zones a user; {args.minutes:g} minutes of traffic ({args.warmup_minutes:g} warm-up)")
        for user in users:
            user.start()
        while time.monotonic() < deadline and gateway.process.poll() is None:
            time.sleep(1.0)
        if gateway.process.poll() is not None:
            stats.fail("gateway", f"canopy serve exited with {gateway.process.returncode} during the soak")
        duration = min(stats.now(), args.minutes * 60.0)
        stop.set()
        for user in users:
            user.join(timeout=HTTP_TIMEOUT + 2 * WS_TIMEOUT)
            if user.is_alive():
                stats.fail("client", "a user did not stop", user.name)
        sampler.join(timeout=60)
        # The last sample, if the sampler stopped before it came.
        if not stats.samples or stats.samples[-1]["t"] < duration - SAMPLE_SECONDS:
            sampler.sample()
    except KeyboardInterrupt:
        interrupted = True
        stop.set()
    finally:
        gateway.stop()
        cluster.stop()
    if interrupted:
        sys.exit("interrupted; the gateway and the cluster are stopped")

    if gateway.stopped_cleanly is False:
        stats.fail("gateway", "canopy serve did not stop within 30 s of SIGTERM")
    log_errors = gateway.log_errors()
    result = analyse(args, stats, duration)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    report, image = args.output_dir / "SOAK.md", args.output_dir / "soak.png"
    plot(image, args, stats, result)
    write_report(report, args, stats, result, gateway, log_errors, image.name)

    for name, ok, measured in result["checks"]:
        say(f"{'skip' if ok is None else 'pass' if ok else 'FAIL'}: {name}: {measured}")
    for t, kind, description, detail in stats.examples[:10]:
        say(f"at {t} s, {kind}: {description}: {detail[:200]}")
    total = sum(stats.totals.values())
    expected = sum(sum(c.values()) for c in stats.expected.values())
    deviations = sum(sum(c.values()) for c in stats.deviations.values())
    print(f"soak {'PASSED' if result['passed'] else 'FAILED'}: {total} requests in {duration / 60:.1f} min "
          f"({total / max(duration, 1):.0f}/s), {expected} expected errors, {result['unexpected']} unexpected, "
          f"{deviations} known deviations; "
          f"RSS {result.get('first_rss', float('nan')):.1f} -> {result.get('last_rss', float('nan')):.1f} MB "
          f"({result.get('slope', float('nan')):+.1f} MB/hour); PG connections {result.get('conn_min', '?')}-"
          f"{result.get('conn_max', '?')}; p99 {result['p99_middle']:.1f} -> {result['p99_last']:.1f} ms; "
          f"report {report}", flush=True)
    sys.exit(0 if result["passed"] else 1)


if __name__ == "__main__":
    main()
