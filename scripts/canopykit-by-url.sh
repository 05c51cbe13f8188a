#!/usr/bin/env bash
# CanopyKit added as an app adds a package (make test's CanopyKit-by-URL
# step; docs/TESTING.md, docs/CANOPYKIT.md): a fresh package outside the
# tree depends on a file:// bare clone of this repository at HEAD, by URL,
# and builds a small program using CanopyKit. The app must fetch
# CanopyKit's dependencies only, never the server's (the root Package.swift
# is CanopyKit's alone: DECISIONS 99 and 127). A build, not a test: make test
# runs it at nice 19 beside the stories tier (DECISIONS 147).
#   scripts/canopykit-by-url.sh
# Exits non-zero, saying what was wrong, when the build fails or the app
# fetched anything but CanopyKit's dependencies.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
scratch=$(mktemp -d "${TMPDIR:-/tmp}/canopykit-by-url-XXXXXX")
trap 'rm -rf "$scratch"' EXIT
revision=$(git -C "$root" rev-parse HEAD)
echo "==> a bare clone of $root at $revision"
git clone -q --bare "$root" "$scratch/canopy.git"

app="$scratch/app"
mkdir -p "$app/Sources/TodoApp"
cat > "$app/Package.swift" <<MANIFEST
// swift-tools-version: 6.0
import PackageDescription
let package = Package(
    name: "TodoApp",
    platforms: [.macOS(.v13), .iOS(.v16)],
    dependencies: [.package(url: "file://$scratch/canopy.git", revision: "$revision")],
    targets: [.executableTarget(name: "TodoApp", dependencies: [.product(name: "CanopyKit", package: "canopy")])]
)
MANIFEST
cat > "$app/Sources/TodoApp/main.swift" <<'PROGRAM'
import CanopyKit
import Foundation

let arguments = CommandLine.arguments
let container = Container(baseURL: URL(string: arguments[1])!, token: arguments[2])
let database = container.privateCloudDatabase
let zone = try await database.save(RecordZone(zoneName: "ByURL"))
let item = Record(recordType: "Item", recordID: Record.ID(recordName: "first", zoneID: zone.zoneID))
item["title"] = "added by URL"
_ = try await database.save(item)
let read = try await database.record(for: item.recordID)
print("read back: \(read["title"] as? String ?? "nothing")")
PROGRAM

echo "==> swift build of an app depending on it by URL (a few minutes on a clean machine)"
if ! swift build --package-path "$app" 2>&1 | tail -20; then
    echo "canopykit-by-url: the app did not build (above)" >&2
    exit 1
fi

fetched=$(ls "$app/.build/checkouts" | sort | tr '\n' ' ')
echo "==> the app fetched: $fetched"
allowed=" canopy swift-nio swift-nio-ssl swift-atomics swift-collections swift-system "
status=0
for package in $fetched; do
    case "$allowed" in
        *" $package "*) ;;
        *) echo "canopykit-by-url: the app fetched $package, which is not a dependency of CanopyKit" >&2; status=1 ;;
    esac
done
for needed in canopy swift-nio swift-nio-ssl; do
    [ -d "$app/.build/checkouts/$needed" ] || { echo "canopykit-by-url: the app did not fetch $needed" >&2; status=1; }
done
if grep -q "Context\.\|hummingbird" "$app/.build/checkouts/canopy/Package.swift"; then
    echo "canopykit-by-url: the root manifest the app read is not CanopyKit's alone" >&2
    status=1
fi
[ -x "$app/.build/debug/TodoApp" ] || { echo "canopykit-by-url: no TodoApp executable was built" >&2; status=1; }
[ "$status" = 0 ] && echo "==> CanopyKit by URL: built, with CanopyKit's dependencies alone"
exit $status
