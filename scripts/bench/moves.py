"""Issue 38: moving 1,000 records with their descendants in one request,
beside saving 1,000 new records in W3's shape (modifyRecords batches of at
most 400), both through the gateway over loopback, one client."""
import statistics
import time

from servers import graphql

ROOTS, CHILDREN, GRANDCHILDREN = 40, 4, 5   # 40 × (1 + 4 + 4·5) = 1,000 records
BATCH = 400


def tree(prefix):
    """1,000 `Item` records: 40 roots, each with 4 children, each with 5 children."""
    records = []
    for r in range(ROOTS):
        root = f"{prefix}r{r}"
        records.append({"recordName": root, "recordType": "Item", "fields": {"n": r, "title": f"root {r}"}})
        for c in range(CHILDREN):
            child = f"{root}c{c}"
            records.append({"recordName": child, "recordType": "Item", "fields": {"n": c, "title": "child"}, "parent": root})
            for g in range(GRANDCHILDREN):
                records.append({"recordName": f"{child}g{g}", "recordType": "Item", "fields": {"n": g, "title": "leaf"}, "parent": child})
    return records


def save_all(token, zone, records):
    """Saves `records` in W3's shape; returns the milliseconds it took."""
    started = time.monotonic()
    for start in range(0, len(records), BATCH):
        answer = graphql(token, "mutation($z: String!, $s: [RecordInput!]) { modifyRecords(scope: PRIVATE, zone: {zoneName: $z}, save: $s) "
                                "{ errors { recordName code } } }", {"z": zone, "s": records[start:start + BATCH]})
        if answer["modifyRecords"]["errors"]:
            raise SystemExit(f"moves: saving the tree failed: {answer['modifyRecords']['errors'][:3]}")
    return (time.monotonic() - started) * 1000


def move_all(token, source, target, roots):
    """Moves `roots` and their descendants; returns (milliseconds, records moved)."""
    started = time.monotonic()
    answer = graphql(token, "mutation($f: String!, $t: String!, $n: [String!]!) { moveRecords(from: {zoneName: $f}, to: {zoneName: $t}, "
                            "recordNames: $n) { moved errors { recordName code } } }", {"f": source, "t": target, "n": roots})
    elapsed = (time.monotonic() - started) * 1000
    if answer["moveRecords"]["errors"]:
        raise SystemExit(f"moves: the move was refused: {answer['moveRecords']['errors'][:3]}")
    return elapsed, len(answer["moveRecords"]["moved"])


def move_costs(token, runs):
    """Medians over `runs`: (save ms, move ms). Each run saves a fresh tree
    of 1,000 in zone MoveA, then moves it to MoveB and back (both moves timed)."""
    for zone in ("MoveA", "MoveB"):
        graphql(token, 'mutation($z: String!) { saveZone(zoneName: $z) { zoneName } }', {"z": zone})
    saves, moves = [], []
    for run in range(runs):
        records = tree(f"m{run}_")
        saves.append(save_all(token, "MoveA", records))
        roots = [record["recordName"] for record in records if "parent" not in record]
        for source, target in (("MoveA", "MoveB"), ("MoveB", "MoveA")):
            elapsed, moved = move_all(token, source, target, roots)
            if moved != len(records):
                raise SystemExit(f"moves: {moved} records moved, not {len(records)}")
            moves.append(elapsed)
    return statistics.median(saves), statistics.median(moves)
