"""The simulated users: each one's thread doing a weighted random mix of
queries, lookups, batches, feeds, sharing, subscriptions and bad requests."""
import json
import random
import threading
import time
import traceback

from client import Client

try:
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect as ws_connect
except ImportError:  # pragma: no cover  (soak.py's main says what is missing before a soak starts)
    ConnectionClosed = ws_connect = None

WS_TIMEOUT = 10.0
RECORD_TYPE = "SoakItem"
RECORDS_PER_ZONE = 150       # record names per zone: the data set stays bounded
ZONES = ["work-0", "work-1"]
SHARED_ZONE = "shared"
WORDS = ["apple", "birch", "cedar", "delta", "ember", "fjord", "grove", "harbor", "iris", "juniper",
         "kelp", "lark", "maple", "north", "olive", "pine", "quartz", "river", "spruce", "tide"]


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
