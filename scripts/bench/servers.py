"""The processes benchmarked: `canopy serve` (Gateway) and `canopy-floor`
(Floor), started and stopped around a run, and a GraphQL request to the gateway."""
import json
import re
import shutil
import os
import signal
import subprocess
import sys
import time
import urllib.request

import common
from common import DATA, PORT, URL, say


class Gateway:
    """`canopy serve` (release build) in the background, with `extra` flags
    and `environment` added to its environment (`binary`: another build;
    `data`: another cluster's folder than .bench)."""

    def __init__(self, extra=(), environment=None, binary=None, data=None):
        self.extra = [str(a) for a in extra]
        self.environment = environment or {}
        self.binary = binary
        self.data = data or DATA

    def __enter__(self):
        log = open(self.data / "serve.log", "a")
        # A few users drive far past a person's request rate: the limiter
        # stays on the path (its lock and arithmetic are measured) but never
        # refuses.
        self.process = subprocess.Popen([str(self.binary or common.BINARY), "serve", "--data-dir", str(self.data), "--port", str(PORT),
                                         "--rate-limit", "1000000000"] + self.extra,
                                        stdout=log, stderr=subprocess.STDOUT,
                                        # The push-latency section's webhook listens on loopback,
                                        # which canopy serve refuses unless allowed (an
                                        # environment variable: older builds compared with
                                        # --binary ignore it).
                                        # W7 and W8 ask without a token from one address: the
                                        # per-address limit would refuse them (issue 36).
                                        env={**os.environ, "CANOPY_OUTBOUND_ALLOW": "127.0.0.1",
                                             "CANOPY_ANONYMOUS_RATE_LIMIT": "0", **self.environment})
        for _ in range(300):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{PORT}/health", timeout=1)
                return self
            except Exception:
                time.sleep(0.1)
        sys.exit("the gateway did not answer /health")

    def __exit__(self, *_):
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            # Keep what explains it, then stop it, so the run's figures are
            # still written (they say the gateway did not stop).
            report = DATA / "gateway-hang.txt"
            with open(report, "w") as out:
                out.write("canopy serve did not stop within 30 s of SIGTERM\n")
                if shutil.which("gdb"):
                    subprocess.run(["gdb", "-p", str(self.process.pid), "-batch", "-ex", "set complaints 0",
                                    "-ex", "thread apply all bt 30"], stdout=out, stderr=subprocess.DEVNULL, timeout=120)
            self.process.kill()
            self.process.wait()
            Gateway.hung = True
            say(f"WARNING: the gateway did not stop within 30 s of SIGTERM; killed it (threads in {report})")

    hung = False


class Floor:
    """`canopy-floor` (release build) running one captured statement."""

    def __init__(self, cluster, name, key, statement, port):
        self.cluster, self.name, self.key, self.port = cluster, name, key, port
        self.sql, parameters = statement
        count = max([int(n) for n in re.findall(r"\$(\d+)", self.sql)] or [0])
        self.parameters = ["NULL" if parameters.get(n) is None else parameters[n] for n in range(1, count + 1)]
        self.url = f"http://127.0.0.1:{port}/graphql"

    def __enter__(self):
        statement = DATA / f"floor-{self.name}.sql"
        statement.write_text(self.sql)
        log = open(DATA / f"floor-{self.name}.log", "a")
        self.process = subprocess.Popen([str(common.FLOOR), str(self.port), self.cluster.socket, self.cluster.port, str(statement),
                                         self.key] + self.parameters, stdout=log, stderr=subprocess.STDOUT)
        problem = "it did not answer"
        for _ in range(300):
            try:
                request = urllib.request.Request(self.url, data=b"{}", method="POST")
                answer = json.load(urllib.request.urlopen(request, timeout=1))
                if answer["data"][self.key] is not None:
                    return self
                problem = "its statement answered null"
                break
            except OSError:
                time.sleep(0.1)
            except ValueError as error:
                problem = f"it answered something that is not JSON ({error})"
                break
        # Not left running: its port would refuse the next run's floor.
        self.process.terminate()
        self.process.wait(timeout=30)
        sys.exit(f"canopy-floor ({self.name}): {problem}; see {DATA}/floor-{self.name}.log")

    def __exit__(self, *_):
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=30)


def graphql(token, query, variables=None):
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    headers = {"Content-Type": "application/json"}
    if token:   # None: a request without a token (the public database, issue 36)
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(URL, data=body, headers=headers)
    answer = json.load(urllib.request.urlopen(request, timeout=60))
    if answer.get("errors"):
        sys.exit(f"the gateway refused a benchmark request: {answer['errors']}")
    return answer["data"]
