#!/usr/bin/env python3
"""Flame graphs of the gateway from `perf script` text, with no tool beyond
Python and the Swift toolchain (Debian has no FlameGraph package).

usage:
  perf script -i perf.data | flamegraph.py fold > stacks.folded   # one line a stack: root;…;leaf COUNT
  flamegraph.py svg --title T < stacks.folded > graph.svg         # the picture (hover for names and shares)
  flamegraph.py top [--match TEXT] [--count N] < stacks.folded     # inclusive shares, the biggest first
  flamegraph.py fold --modules < perf.txt | flamegraph.py modules   # CPU by the Canopy module that spent it

Swift's names are demangled with `swift demangle --simplified`. Offsets,
addresses and libraries are dropped; frames perf could not name are
`[unknown]`. Used by `make flamegraphs` (scripts/bench/flamegraphs.sh).
"""
import argparse
import collections
import hashlib
import html
import re
import shutil
import subprocess
import sys

FRAME = re.compile(r"^\s*[0-9a-f]+\s+(.*?)(?:\+0x[0-9a-f]+)?\s+\((.*)\)\s*$")


def demangled(names, modules=False):
    """{mangled: readable} through `swift demangle`, one call for all;
    with `modules`, names keep their module (`CanopyPlanner.RecordsPlan…`)."""
    swift = [name for name in names if name.startswith("$s") or name.startswith("_$s")]
    if not swift or not shutil.which("swift"):
        return {}
    flags = ["--compact"] if modules else ["--simplified", "--compact"]
    out = subprocess.run(["swift", "demangle"] + flags, input="\n".join(swift),
                         capture_output=True, text=True).stdout.splitlines()
    return dict(zip(swift, out)) if len(out) == len(swift) else {}


def short(name):
    """A readable frame: generic noise and argument lists dropped."""
    name = re.sub(r"\(.*\)", "()", name, count=1) if len(name) > 120 else name
    name = name.replace("partial apply for ", "").replace("closure #", "closure ")
    return name.replace(";", ",")


def fold(lines, modules=False):
    stacks = collections.Counter()
    frames = []
    for line in list(lines) + [""]:
        if not line.strip():
            if frames:
                stacks[";".join(reversed(frames))] += 1
            frames = []
            continue
        match = FRAME.match(line)
        if match:
            symbol = match.group(1).strip()
            frames.append(symbol if symbol and symbol != "[unknown]" else f"[{match.group(2).rsplit('/', 1)[-1]}]")
    names = demangled({frame for stack in stacks for frame in stack.split(";")}, modules)
    folded = collections.Counter()
    for stack, count in stacks.items():
        folded[";".join(short(names.get(frame, frame)) for frame in stack.split(";"))] += count
    for stack, count in sorted(folded.items()):
        print(f"{stack} {count}")


def read_folded(lines):
    for line in lines:
        stack, _, count = line.rstrip("\n").rpartition(" ")
        if stack:
            yield stack.split(";"), int(count)


def svg(lines, title, width=1600, row=16):
    root = {"children": {}, "count": 0}
    for frames, count in read_folded(lines):
        root["count"] += count
        node = root
        for frame in frames:
            node = node["children"].setdefault(frame, {"children": {}, "count": 0})
            node["count"] += count
    total = root["count"] or 1
    rectangles = []

    def place(node, name, x, depth):
        w = node["count"] / total * (width - 20)
        if w < 1.0:
            return 0
        rectangles.append((name, x, depth, w, node["count"]))
        child_x = x
        for child_name, child in sorted(node["children"].items()):
            place(child, child_name, child_x, depth + 1)
            child_x += child["count"] / total * (width - 20)
        return depth

    place(root, "all", 10, 0)
    depth = max(r[2] for r in rectangles) + 1
    height = depth * row + 60
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="monospace" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="#fdfdf6"/>',
           f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="15">{html.escape(title)}</text>']
    for name, x, level, w, count in rectangles:
        y = height - 20 - (level + 1) * row
        hue = int(hashlib.md5(name.encode()).hexdigest()[:4], 16)
        colour = f"rgb({205 + hue % 50},{80 + hue % 120},{40 + hue % 50})"
        label = f"{name} ({count} samples, {count / total * 100:.1f}%)"
        out.append(f'<g><title>{html.escape(label)}</title><rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{row - 1}" '
                   f'fill="{colour}" rx="1"/>')
        characters = int(w / 6.6)
        if characters >= 3:
            text = name if len(name) <= characters else name[:characters - 2] + ".."
            out.append(f'<text x="{x + 2:.1f}" y="{y + row - 4}">{html.escape(text)}</text>')
        out.append("</g>")
    out.append("</svg>")
    print("\n".join(out))


def top(lines, match, count):
    inclusive = collections.Counter()
    total = 0
    for frames, samples in read_folded(lines):
        total += samples
        for frame in set(frames):
            if match is None or match in frame:
                inclusive[frame] += samples
    for frame, samples in inclusive.most_common(count):
        print(f"{samples / total * 100:6.2f}%  {frame}")


CANOPY = re.compile(r"\b(Canopy[A-Za-z]*)\.")


def modules(lines, count):
    """Each sample charged to the module of its innermost Canopy frame (the
    code Canopy itself runs, libraries it calls included), or else to its
    leaf's module or library: where the gateway's own CPU goes, from a
    `fold --modules` file."""
    charged = collections.Counter()
    total = 0
    for frames, samples in read_folded(lines):
        total += samples
        owner = next((found.group(1) for frame in reversed(frames) if (found := CANOPY.search(frame))), None)
        if owner is None:
            leaf = frames[-1]
            match = re.match(r"(?:\(extension in )?([A-Za-z_][A-Za-z0-9_]*)\.", leaf.replace("specialized ", "").replace("generic ", ""))
            owner = ("(other) " + match.group(1)) if match else "(other) " + leaf[:40]
        charged[owner] += samples
    for owner, samples in charged.most_common(count):
        print(f"{samples / total * 100:6.2f}%  {owner}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["fold", "svg", "top", "modules"])
    parser.add_argument("--title", default="canopy serve")
    parser.add_argument("--match")
    parser.add_argument("--count", type=int, default=60)
    parser.add_argument("--modules", action="store_true", help="fold: keep Swift module names (for `modules`)")
    options = parser.parse_args()
    if options.command == "fold":
        fold(sys.stdin, options.modules)
    elif options.command == "svg":
        svg(sys.stdin, options.title)
    elif options.command == "modules":
        modules(sys.stdin, options.count)
    else:
        top(sys.stdin, options.match, options.count)


if __name__ == "__main__":
    main()
