"""Sampling: every SAMPLE_SECONDS, the gateway's RSS, threads and open
files, PostgreSQL's connections and the window's latencies."""
import threading
import time

from processes import say
from stats import percentile

SAMPLE_SECONDS = 5.0


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
