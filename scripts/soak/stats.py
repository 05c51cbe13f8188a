"""What the users and the sampler record (Stats), and the arithmetic on
it: percentiles and a least-squares slope."""
import math
import statistics
import threading
import time
from collections import Counter, defaultdict


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
