"""What the benchmark's modules share: where things are (the binaries, .bench,
the ports), running a command, and the cluster in .bench reached with psql."""
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The binaries benchmarked. bench.py's --binary and --floor-binary replace
# them, so other modules read them as common.BINARY and common.FLOOR.
BINARY = Path(os.environ.get("CANOPY_BENCH_BINARY", ROOT / ".build" / "release" / "canopy"))
FLOOR = Path(os.environ.get("CANOPY_BENCH_FLOOR", ROOT / ".build" / "release" / "canopy-floor"))
FLOOR_PORT = 18090
DATA = ROOT / ".bench"
PORT = 18080
URL = f"http://127.0.0.1:{PORT}/graphql"


def say(message):
    print(f"==> {message}", flush=True)


def run(args, **options):
    return subprocess.run([str(a) for a in args], check=True, capture_output=True, text=True, **options).stdout


class Cluster:
    """The embedded cluster in .bench, reached with psql as its administrator."""

    def __init__(self):
        out = run([BINARY, "cluster", "start", "--data-dir", DATA])
        match = re.search(r"running on port (\d+), socket in (\S+), log (\S+)", out)
        admin = re.search(r"admin: postgres://([^@]+)@", out)
        if not match or not admin:
            sys.exit(f"cannot read the cluster's address from: {out}")
        self.port, self.socket, self.log = match.group(1), match.group(2).rstrip(","), Path(match.group(3))
        self.user = admin.group(1)

    def psql(self, sql):
        return run(self.psql_args() + ["-c", sql]).strip()

    def psql_args(self):
        return ["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", self.socket, "-p", self.port,
                "-U", self.user, "-d", "canopy"]

    def copy_in(self, sql, data):
        """Streams `data` (a string or an iterable of strings) into `COPY … FROM
        STDIN` through psql, triggers off."""
        process = subprocess.Popen(self.psql_args() + ["-c", "SET session_replication_role = replica", "-c", sql],
                                   stdin=subprocess.PIPE, text=True)
        for chunk in ([data] if isinstance(data, str) else data):
            process.stdin.write(chunk)
        process.stdin.close()
        if process.wait() != 0:
            raise SystemExit(f"COPY failed: {sql}")

    def pgbench_args(self):
        # As the gateway's role, not the administrator: a superuser bypasses
        # row-level security, and the ceiling must pay for it as the gateway does.
        return ["-h", self.socket, "-p", self.port, "-U", "canopy_gateway", "canopy"]


def use_binaries(binary=None, floor=None):
    """Benchmarks `binary` (canopy) and `floor` (canopy-floor) instead of the
    defaults; None keeps a default."""
    global BINARY, FLOOR
    if binary is not None:
        BINARY = Path(binary).resolve()
    if floor is not None:
        FLOOR = Path(floor).resolve()
