"""One user's HTTP connection to /graphql, and how it classifies every
answer: expected codes, known deviations, unexpected errors."""
import http.client
import json
import random
import time
import urllib.parse

HTTP_TIMEOUT = 30.0
# Answers that contradict docs/API.md but are known (each names its finding). They
# are counted and listed apart in the report, not as unexpected errors, so
# that a soak measures stability; --strict counts them as unexpected.
KNOWN_DEVIATIONS = {
    # (kind, code) pairs that differ from docs/API.md and are documented. None now:
    # a READ_ONLY participant's update *with* the record's change tag was
    # UNKNOWN_ITEM until modify_records.sql told it apart from a missing
    # record (SharingPermissionTests covers it).
}
STRICT = False


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
