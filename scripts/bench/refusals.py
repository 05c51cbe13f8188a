"""Issue 48: what a refused introspection document costs the gateway,
beside a small request and the standard introspection answer. Each is POSTed
without a token by wrk at --clients, medians of --runs; the refusals must
cost what a small request costs (they are answered from the document's
shape, before validation and the executor), not what an answer costs."""
import json
import statistics
import urllib.error
import urllib.request

from common import ROOT, URL, say
from drivers import run_wrk, wrk_script
from measure import cpu_seconds

ALIASES = "{ __schema { " + " ".join(f"a{i}: types {{ name fields {{ name }} }}" for i in range(60)) + " } }"
HEAVY = "{ " + " ".join(f"s{i}: __schema {{ types {{ fields {{ args {{ type {{ name }} }} type {{ name }} }} }} }}" for i in range(25)) + " }"
STANDARD = (ROOT / "Server" / "Tests" / "python" / "standard_introspection.graphql").read_text()

# Issue 64: a document of repeated directives, the kind whose validation once
# grew with the square of its length (360 KB took 40 s of CPU); now refused
# by the directive count before validation, after a parse linear in its
# length. As long as a document without a token may be (64 KiB, less the
# numbered comment a new document gets): the largest anonymous refusal.
DIRECTIVES = "{ __typename " + "@skip(if: false) " * 3800 + "}"
LARGEST = "refused, each document new: 63 KiB of repeated directives (issue 64), the longest a document without a token may be"

SMALL = "a small request: `{ __typename }`"
SAME_SIZE = "{ " + " ".join(f"alias_number_{i:02d}_of_thirty: __typename" for i in range(30)) + " " + " " * 600 + "}"
DOCUMENTS = [
    (SMALL, "{ __typename }", 200),
    ("answered: 30 aliased `__typename`, a document the size of the refused ones", SAME_SIZE, 200),
    ("refused: 60 aliases under `__schema` (the alias limit)", ALIASES, 400),
    ("refused: 25 aliased schemas (`--max-introspection-cost`)", HEAVY, 400),
    ("answered: the standard introspection query (its answer kept after the first)", STANDARD, 200),
    ("refused, each document new: 60 aliases under `__schema` after a numbered comment", ALIASES, -400),
    ("answered, each document new: 30 aliased `__typename` after a numbered comment", SAME_SIZE, -200),
    (LARGEST, DIRECTIVES, -400),
]


def fresh_script(query):
    """A wrk script sending `query` behind a numbered comment, so that no
    cache (parsed documents, refusals, answers) has seen it."""
    head = json.dumps({"query": "#"})[:-2]
    tail = json.dumps({"query": "\n" + query})[len('{"query": "'):]
    return ('local threads = 0\n'
            'function setup(thread) threads = threads + 1; thread:set("id", threads) end\n'
            'local count = 0\n'
            'local headers = {["Content-Type"] = "application/json"}\n'
            'request = function()\n'
            '  count = count + 1\n'
            f'  return wrk.format("POST", "/graphql", headers, {json.dumps(head)} .. id .. "_" .. count .. {json.dumps(tail)})\n'
            'end\n')
HEADING = "## Refusals cost what a small request costs (issue 48)"


def status_of(query):
    request = urllib.request.Request(URL, data=json.dumps({"query": query}).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, len(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, len(error.read())


def measure(gateway, options):
    """(name, answer bytes, req/s, p50 ms, gateway CPU µs a request), medians."""
    rows = []
    for name, query, expected in DOCUMENTS:
        fresh = expected < 0
        expected = abs(expected)
        status, size = status_of(query)
        if status != expected:
            raise SystemExit(f"refusals: {name} answered {status}, not {expected}")
        say(f"refusals: {name}: {options.runs} runs of {options.seconds} s")
        runs = []
        for _ in range(options.runs):
            before = cpu_seconds(gateway.process)
            script = fresh_script(query) if fresh else wrk_script(None, query)
            rps, p50, _ = run_wrk(script, options.clients, options.seconds, {}, allow_errors=expected != 200)
            runs.append((rps, p50, (cpu_seconds(gateway.process) - before) / (rps * options.seconds) * 1e6))
        rows.append((name, size, *(statistics.median(run[i] for run in runs) for i in range(3))))
        say(f"  {rows[-1][2]:,.0f} req/s, gateway CPU {rows[-1][4]:.0f} µs a request")
    return rows


def report_lines(rows, options):
    small_cpu = next(row[4] for row in rows if row[0] == SMALL)
    lines = [HEADING, "",
             f"Each document POSTed without a token by wrk ({options.clients} clients), medians of {options.runs} runs of "
             f"{options.seconds} s; the gateway's CPU per request from /proc. The refusals are answered from the document's "
             "shape (aliases, depth, selections) or from `IntrospectionCost`'s count, before the executor writes anything.", "",
             "| document | answer | requests/s | p50 | gateway CPU a request | CPU / small request |", "|---|---|---|---|---|---|"]
    for name, size, rps, p50, cpu in rows:
        lines.append(f"| {name} | {size:,} B | {rps:,.0f} | {p50:.2f} ms | {cpu:.0f} µs | {cpu / small_cpu:.2f}× |")
    same_size_cpu = next(row[4] for row in rows if row[0].startswith("answered: 30"))
    fresh_cpu = next(row[4] for row in rows if row[0].startswith("answered, each"))
    resent = max(row[4] for row in rows if row[0].startswith("refused:"))
    fresh_refusal = next(row[4] for row in rows if row[0].startswith("refused, each"))
    # Validation's worst cost a byte (issue 64): the largest refused document,
    # new each time, against a new small one, per byte of document.
    size_of = {name: len(query) for name, query, _ in DOCUMENTS}
    largest_cpu = next(row[4] for row in rows if row[0] == LARGEST)
    fresh_name = next(row[0] for row in rows if row[0].startswith("answered, each"))
    per_byte = (largest_cpu / size_of[LARGEST]) / (fresh_cpu / size_of[fresh_name])
    goals = [("a refusal resent costs what an answered request of its size costs (within 2×)", resent / same_size_cpu),
             ("a new refused document costs what a new answered document of its size costs (within 2×)", fresh_refusal / fresh_cpu),
             (f"the worst validation cost a byte: {size_of[LARGEST] // 1024} KiB of directives against a new small document, "
              "per byte (within 2×; issue 64)", per_byte)]
    lines += ["", "| goal | measured | |", "|---|---|---|"]
    lines += [f"| {goal} | {ratio:.2f}× | {'met' if ratio <= 2 else '**not met**'} |" for goal, ratio in goals] + [""]
    return lines
