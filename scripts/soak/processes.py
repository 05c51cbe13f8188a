"""The soak's processes: the embedded cluster, `canopy serve`, the data
directory they live in, and running a command."""
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BINARY = Path(os.environ.get("CANOPY_SOAK_BINARY", ROOT / ".build" / "release" / "canopy"))
MARKER = ".canopy-soak"


def say(message):
    print(f"==> {message}", flush=True)


def run(args, **options):
    return subprocess.run([str(a) for a in args], check=True, capture_output=True, text=True, **options).stdout


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


def prepare_data_dir(data_dir):
    if data_dir.exists():
        if not (data_dir / MARKER).exists() and any(data_dir.iterdir()):
            sys.exit(f"{data_dir} exists and is not a soak's data directory (no {MARKER}); choose another --data-dir")
        subprocess.run([str(BINARY), "cluster", "stop", "--data-dir", str(data_dir)], capture_output=True, timeout=120)
        shutil.rmtree(data_dir)
    data_dir.mkdir(parents=True)
    (data_dir / MARKER).write_text("made by scripts/soak/soak.py; removed by the next soak\n")
    os.chmod(data_dir, 0o755)
