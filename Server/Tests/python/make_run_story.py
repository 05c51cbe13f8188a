#!/usr/bin/env python3
"""`make run` as a developer uses it, in a pseudo-terminal (issue 68, item 9).

Runs the README's `make run` (the real Makefile's recipe and scripts/run.sh;
its `build` and `postgres` prerequisites are taken as done, `make -o`, since
the test's build made the binary) three times in a terminal of its own:

1. It prints a first request; the token in it answers `me` as demo over HTTP.
   Ctrl-C (the terminal's interrupt character) stops serve, and make exits 0
   without "*** [run] Interrupt".
2. A second run prints the same token: no new token is minted while the
   stored one is live (`canopy users tokens demo` lists one live token).
3. After `canopy users revoke`, a third run mints a new one, which answers.

Only loopback: the server listens on 127.0.0.1 at the port given.

usage: make_run_story.py REPOSITORY_ROOT DATA_DIR PORT
"""

import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

root, data_dir, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
canopy = os.path.join(root, ".build/debug/canopy")


def step(text):
    print(f"== {text}", flush=True)


def me(token):
    """The answer to `{ me { name } }` with this token: (status, name)."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/graphql",
        data=json.dumps({"query": "{ me { name } }"}).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.load(answer)["data"]["me"]["name"]
    except urllib.error.HTTPError as error:
        return error.code, None


def make_run():
    """One `make run` in a pseudo-terminal: its token, what it printed and make's exit status."""
    pid, terminal = pty.fork()
    if pid == 0:
        # As typed in a shell: not as a sub-make of `make test` (its flags and jobserver).
        environment = {key: value for key, value in os.environ.items() if key not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
        os.execvpe("make", ["make", "-C", root, "-o", "build", "-o", "postgres", "run",
                            f"DATA_DIR={data_dir}", f"PORT={port}"], environment)
    output = b""

    def read(seconds):
        nonlocal output
        ready, _, _ = select.select([terminal], [], [], seconds)
        if not ready:
            return True
        try:
            chunk = os.read(terminal, 4096)
        except OSError:   # the terminal closed: every process on it ended
            return False
        output += chunk
        return bool(chunk)

    def text():
        return output.decode(errors="replace")

    deadline = time.monotonic() + 180
    token = None
    while token is None:
        if time.monotonic() > deadline:
            raise SystemExit(f"make run printed no token within 180 s:\n{text()}")
        if not read(1):
            raise SystemExit(f"make run ended before it printed a token:\n{text()}")
        found = re.search(r"Bearer (cnp_[A-Za-z0-9_-]+)", text())
        token = found.group(1) if found else None
    # The server answers the printed request (it may still be starting).
    answered = None
    while time.monotonic() < deadline:
        read(0.2)
        try:
            answered = me(token)
            if answered[0] == 200:
                break
        except (urllib.error.URLError, ConnectionError, OSError):
            pass
        time.sleep(0.3)
    if not answered or answered[0] != 200:
        os.kill(pid, signal.SIGKILL)
        raise SystemExit(f"the printed request was not answered within 180 s ({answered}):\n{text()}")
    if answered[1] != "demo":
        raise SystemExit(f"the printed token is not demo's: {answered}")
    # Ctrl-C, typed: the terminal sends SIGINT to its foreground process group.
    os.write(terminal, b"\x03")
    ended = time.monotonic() + 60
    while read(0.5) and time.monotonic() < ended:
        pass
    finished, status = os.waitpid(pid, os.WNOHANG)
    while finished == 0 and time.monotonic() < ended:
        time.sleep(0.2)
        finished, status = os.waitpid(pid, os.WNOHANG)
    if finished == 0:
        os.kill(pid, signal.SIGKILL)
        raise SystemExit(f"make run did not end within 60 s of Ctrl-C:\n{text()}")
    os.close(terminal)
    return token, text(), os.waitstatus_to_exitcode(status)


def check_quiet_stop(output, status, which):
    if status != 0:
        raise SystemExit(f"{which}: make exited {status} after Ctrl-C:\n{output}")
    if "Interrupt" in output or "***" in output:
        raise SystemExit(f"{which}: make reported the interrupt:\n{output}")


def live_tokens():
    listed = subprocess.run([canopy, "users", "tokens", "demo", "--json", "--data-dir", data_dir],
                            capture_output=True, text=True, check=True).stdout
    return [row["prefix"] for row in json.loads(listed) if row["revoked"] is None]


step("1. make run prints a token that answers; Ctrl-C ends it quietly")
first, output, status = make_run()
check_quiet_stop(output, status, "first run")
print(f"first token {first[:10]}…, make exited {status}")

step("2. a second make run uses the stored token again")
second, output, status = make_run()
check_quiet_stop(output, status, "second run")
if second != first:
    raise SystemExit("the second run minted another token instead of using the stored one")
live = live_tokens()
if len(live) != 1:
    raise SystemExit(f"demo has {len(live)} live tokens after two runs, not one: {live}")
print(f"the same token; demo has one live token ({live[0]})")

step("3. revoked, the token is replaced by the next make run")
subprocess.run([canopy, "users", "revoke", live[0], "--data-dir", data_dir], check=True, capture_output=True)
third, output, status = make_run()
check_quiet_stop(output, status, "third run")
if third == first:
    raise SystemExit("the third run printed the revoked token")
print("a new token, which answers")

print("make run story passed")
