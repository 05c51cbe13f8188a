"""The load drivers: wrk against an HTTP server and pgbench against the
cluster, their scripts, and the statements the gateway sends (from
PostgreSQL's log) that pgbench runs as the ceiling."""
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

from common import URL, run
from measure import percentile
from servers import Gateway, graphql


def capture_statements(cluster, requests):
    """Runs each (name, token, query, variables, markers) request once with
    statement logging on for the gateway role and returns, per name, the
    statements (SQL, parameters) the gateway sent for it that contain each
    marker, in order."""
    cluster.psql("ALTER ROLE canopy_gateway SET log_min_duration_statement = 0")
    found = {}
    with Gateway():
        for name, token, query, variables, markers in requests:
            offset = cluster.log.stat().st_size
            graphql(token, query, variables)
            time.sleep(0.2)
            text = cluster.log.read_text(errors="replace")[offset:]
            entries = re.split(r"\n(?=\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)", text)
            statements = []
            for index, entry in enumerate(entries):
                match = re.search(r"execute [^:]+: (.*)", entry, re.S)
                if not match:
                    continue
                sql = match.group(1).strip()
                parameters = {}
                if index + 1 < len(entries) and "DETAIL:  parameters:" in entries[index + 1]:
                    detail = entries[index + 1].split("DETAIL:  parameters:", 1)[1]
                    for number, value in re.findall(r"\$(\d+) = (NULL|'(?:[^']|'')*')", detail):
                        parameters[int(number)] = None if value == "NULL" else value[1:-1].replace("''", "'")
                statements.append((sql, parameters))
            found[name] = []
            for marker in markers:
                matches = [statement for statement in statements if marker in statement[0]]
                if not matches:
                    sys.exit(f"the gateway's statement for {name} ({marker}) was not found in {cluster.log}")
                found[name].append(matches[-1])
    cluster.psql("ALTER ROLE canopy_gateway RESET log_min_duration_statement")
    return found


def pgbench_script(sql, parameters, random_parameter=None):
    """The statement with $n as pgbench variables (-D) and NULLs inlined."""
    defines = []

    def replace(match):
        number = int(match.group(1))
        if number == random_parameter:
            return ":after"
        value = parameters.get(number)
        if value is None:
            return "NULL"
        if value == "":
            # pgbench refuses an empty -D (nobody's identity, issue 36's W7 and W8).
            return "''"
        defines.append(f"p{number}={value}")
        return f":p{number}"

    return re.sub(r"\$(\d+)", replace, sql), defines


def run_pgbench(cluster, script, defines, clients, seconds, header=""):
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "script.sql"
        path.write_text(header + script + ";\n")
        arguments = ["pgbench", "-n", "-M", "prepared", "-c", clients, "-j", "2", "-T", seconds,
                     "-f", path, "-l", "--log-prefix", Path(directory) / "log"]
        for define in defines:
            arguments += ["-D", define]
        out = run(arguments + cluster.pgbench_args())
        tps = float(re.search(r"tps = ([\d.]+)", out).group(1))
        latencies = []
        for log in Path(directory).glob("log*"):
            for line in log.read_text().splitlines():
                latencies.append(int(line.split()[2]) / 1000.0)
        return tps, percentile(latencies, 0.5), percentile(latencies, 0.99)


def run_wrk(lua, clients, seconds, environment, url=URL, threads=2, allow_errors=False):
    """(requests/s, p50 ms, p99 ms); exits when any answer was not 2xx,
    unless `allow_errors` (a refusal measured on purpose)."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "script.lua"
        path.write_text(lua)
        out = run(["wrk", "-t", threads, "-c", clients, "-d", f"{seconds}s", "--timeout", "60s", "--latency", "-s", path, url],
                  env={**os.environ, **environment})
        if "Non-2xx" in out and not allow_errors:
            sys.exit(f"wrk saw errors: {out}")
        rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))

        def latency(label):
            value, unit = re.search(label + r"\s+([\d.]+)(us|ms|s)", out).groups()
            return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]

        return rps, latency("50%"), latency("99%")


def wrk_script(token, query, variables=None, token_file=False):
    if not token_file:
        body = json.dumps({"query": query, "variables": variables or {}})
        script = (f'wrk.method = "POST"\nwrk.body = {json.dumps(body)}\n'
                  f'wrk.headers["Content-Type"] = "application/json"\n')
        # token None: without Authorization (the public database, issue 36).
        return script + (f'wrk.headers["Authorization"] = "Bearer {token}"\n' if token else "")
    prefix, suffix = json.dumps({"query": query, "variables": {"since": "TOKEN"}}).split("TOKEN")
    return f"""
local tokens = {{}}
for line in io.lines(os.getenv("CANOPY_BENCH_TOKENS")) do tokens[#tokens + 1] = line end
local headers = {{["Content-Type"] = "application/json", ["Authorization"] = "Bearer {token}"}}
request = function()
  return wrk.format("POST", "/graphql", headers, {json.dumps(prefix)} .. tokens[math.random(#tokens)] .. {json.dumps(suffix)})
end
"""
