"""Measuring: a process's CPU time and peak memory (/proc), percentiles,
and what W3's gateway runs saved."""
import os
import re
from pathlib import Path


def cpu_seconds(process):
    """User + system CPU time a running process has used (/proc/PID/stat)."""
    fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def context_switches(process):
    """Voluntary and involuntary context switches of all a process's live
    threads (/proc/PID/task/*/status)."""
    total = 0
    for status in Path(f"/proc/{process.pid}/task").glob("*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        total += sum(int(n) for n in re.findall(r"ctxt_switches:\s+(\d+)", text))
    return total


def peak_memory_mb(process):
    """The gateway's peak resident memory (VmHWM), in MB."""
    status = Path(f"/proc/{process.pid}/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)) / 1024


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def saved_batch_records(cluster):
    """Records W3's gateway runs have saved so far."""
    return int(cluster.psql("SELECT count(*) FROM canopy.records r JOIN canopy.zones z ON z.id = r.zone_id "
                            "WHERE z.name = 'Bulk' AND r.record_name LIKE 'w%'"))


def quiet(cluster):
    """No gateway statement is running (the last W3 batches have finished)."""
    return cluster.psql("SELECT count(*) FROM pg_stat_activity WHERE usename = 'canopy_gateway' "
                        "AND state = 'active' AND query LIKE '%modify_records%'") == "0"
