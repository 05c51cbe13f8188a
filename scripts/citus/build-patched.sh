#!/usr/bin/env bash
# Builds Citus 13.2.2 from the source release beside the checkout
# (../shared/vendor/citus: its tarball and its PostgreSQL 15.20 compat patch,
# applied as its own build.sh does) with Canopy's patches
# (scripts/citus/patches/*.patch, in order; DECISIONS 175 says why each is
# needed), and installs it into Debian's PostgreSQL 15. Writes
# $(pg_config --sharedir)/extension/citus.canopy-patches, the SHA-256 of the
# patches applied, by which scripts/ensure-citus.sh knows the build is
# current. Needs root (apt-get, make install); about 7 minutes on 2 cores.
# Usage: build-patched.sh VENDOR_DIR [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
vendor=${1:?usage: build-patched.sh VENDOR_DIR [BUILD_DIR]}
version=13.2.2
tarball="$vendor/citus-$version.tar.gz"
[ -f "$tarball" ] || { echo "build-patched.sh: no $tarball" >&2; exit 1; }
echo "citus $version: installing build dependencies (Debian)"
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -q postgresql-server-dev-15 liblz4-dev libzstd-dev libkrb5-dev libselinux1-dev \
  libxslt1-dev libpam0g-dev libssl-dev >/dev/null
build=${2:-$(mktemp -d)}
mkdir -p "$build"
rm -rf "$build/citus-$version"
tar -xzf "$tarball" -C "$build"
src="$build/citus-$version"
if grep -qs 'extern bool have_createdb_privilege' "$(pg_config --includedir-server)/commands/dbcommands.h"; then
  echo "citus $version: this PostgreSQL exports have_createdb_privilege; applying the vendor's compat patch"
  patch -s -d "$src" -p1 < "$vendor/pg15-exported-have-createdb-privilege.patch"
fi
for p in "$root"/scripts/citus/patches/*.patch; do
  echo "citus $version: applying $(basename "$p")"
  patch -s -d "$src" -p1 < "$p"
done
cd "$src"
echo "citus $version: configure"
./configure --without-libcurl >"$build/configure.log" 2>&1 || { tail -n 30 "$build/configure.log"; exit 1; }
echo "citus $version: make (log: $build/make.log)"
make -j"$(nproc)" >"$build/make.log" 2>&1 || { tail -n 30 "$build/make.log"; exit 1; }
make install >>"$build/make.log" 2>&1 || { tail -n 30 "$build/make.log"; exit 1; }
"$root/scripts/citus/patches-digest.sh" > "$(pg_config --sharedir)/extension/citus.canopy-patches"
echo "citus $version: installed into $(pg_config --pkglibdir), with Canopy's patches"
