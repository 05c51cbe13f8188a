# Canopy: the commands the README names.
#   make run    build, start the embedded PostgreSQL cluster, migrate, serve,
#               and print a first request
#   make test   install PostgreSQL, Citus, pg_auto_failover, headless Chromium
#               and Node if missing, build, run the test tiers one after another
#               (docs/TESTING.md); beside the stories tier, build CanopyKit
#               by URL and fuzz 10 s a target
#   make bench  release build; the gateway against pgbench; BENCHMARKS.md
#               (last, W1-W4 on Citus beside one PostgreSQL; alone:
#               make bench-citus, which rewrites that section only)
#   make soak   release build; 30 minutes of mixed traffic from 20 users;
#               docs/soak/SOAK.md and soak.png (not part of make test)
#   make fuzz   libFuzzer build (into .build); every target for FUZZ_SECONDS
#               (300) each; docs/fuzz/RESULTS.md (make test runs 10 s each)
#   make fuzz-http  generated requests against a live server for 20 minutes
#               (make test runs 150 of them); docs/FUZZING.md
#   make fault  the sync engines' randomized fault run, FAULT_SEEDS (1-50) of
#               FAULT_STEPS (80) with each of FAULT_ENGINES (js swift mixed);
#               docs/SYNC_FAULTS.md (make test runs seeds 1-3 of 30 steps, mixed)
#   make network-soak  NETWORK_CYCLES (20) cuts and heals of the gateway's link
#               to the primary under writers, in network namespaces; nothing
#               may leak; docs/RELIABILITY.md (make test runs 3)
#   make test-on-loop  the whole database tier serving on the sockets' loops
#               (--serve-on-loop; make test runs eight of its suites so, beside the stories)
#   make test-citus-gateway  the database tier's gateway suites on Citus,
#               the slow ones too (make test leaves those out)
# Both install PostgreSQL from Debian's packages when it is missing (as root).

SWIFT ?= swift
export SWIFT
# The server is the package in Server/ (the root Package.swift is CanopyKit's
# alone, for apps that add this repository by URL: DECISIONS 127); it builds
# into .build here, as before, so .build/debug/canopy is where it always was.
SERVER_PACKAGE = --package-path Server --scratch-path $(CURDIR)/.build
export SERVER_PACKAGE
PORT ?= 8080
DATA_DIR ?= .canopy

.PHONY: run test build postgres clean stop docker-config bench bench-full flamegraphs soak fuzz fuzz-build fuzz-http fault network-soak test-citus-gateway test-on-loop bench-citus

postgres:
	@scripts/ensure-postgres.sh

build:
	$(SWIFT) build $(SERVER_PACKAGE) --product canopy

test: postgres
	@scripts/ensure-citus.sh
	@scripts/ensure-browser.sh
	@scripts/ensure-node.sh
	@scripts/ensure-auto-failover.sh
	@scripts/ensure-netns.sh
	python3 -m pip install -q -r Server/Tests/python/requirements.txt
	$(SWIFT) build $(SERVER_PACKAGE) --build-tests
	# The fuzz build too, now: into .build (DECISIONS 132), which a running
	# swift test keeps locked, and the tests are linked already.
	$(MAKE) fuzz-build
	# The tiers (docs/TESTING.md), one after another, each on a fresh
	# PostgreSQL cluster that scripts/test-tier.sh makes and removes. A
	# test's tier is the target it lives in (Server/Tests/<Tier>Tests).
	# --skip-build: the builds above made everything. The latency tier runs
	# alone, before the stories; the stories tier, serial and mostly waiting,
	# has beside it the two steps that are not tests: CanopyKit added by the
	# repository's URL (a build, at nice 19) and every parser of outside
	# input under libFuzzer for 10 s after the regression inputs of crashes
	# found before (docs/FUZZING.md; DECISIONS 147).
	scripts/test-tier.sh pure --skip-build
	scripts/test-tier.sh database --skip-build
	scripts/test-tier.sh citus --skip-build
	scripts/test-tier.sh latency --skip-build
	# And, at the same time as those two, the citus-gateway tier and then
	# the on-loop tier, their test binary run itself, as the stories' swift
	# test holds .build's lock (scripts/beside-stories.sh; DECISIONS 176,
	# 196).
	scripts/beside.sh scripts/beside-stories.sh scripts/test-tier.sh stories --skip-build

# The database tier's gateway suites again on distributed Citus tables
# (scripts/citus-gateway-suites.txt; DECISIONS 174), every one, alone: make
# test runs those not marked "slow: " beside the stories tier (DECISIONS
# 176, 185).
test-citus-gateway: postgres
	@scripts/ensure-citus.sh
	$(SWIFT) build $(SERVER_PACKAGE) --build-tests
	scripts/test-tier.sh citus-gateway --skip-build

# The whole database tier with every gateway serving on its sockets' loops
# (--serve-on-loop; docs/TESTING.md, "The on-loop tier").
test-on-loop: postgres
	$(SWIFT) build $(SERVER_PACKAGE) --build-tests
	CANOPY_ON_LOOP_ALL=1 scripts/test-tier.sh on-loop --skip-build

# Benchmarks: the release gateway (wrk) against the same SQL (pgbench);
# writes BENCHMARKS.md. bench: 200,000 records (W6 at 20,000 and 200,000), 3 runs
# of 6 s a side (about 8 minutes after the release build); bench-full:
# 1,000,000 records, W6 at 100,000, 1,000,000 and 5,000,000, 5 runs of 20 s.
bench: postgres
	@scripts/ensure-bench-tools.sh
	@scripts/ensure-citus.sh
	python3 -m pip install -q -r Server/Tests/python/requirements.txt
	$(SWIFT) build $(SERVER_PACKAGE) -c release --product canopy
	$(SWIFT) build $(SERVER_PACKAGE) -c release --product canopy-floor
	$(SWIFT) build $(SERVER_PACKAGE) -c release --product canopykit-sync
	python3 scripts/bench/bench.py --records 200000 --scales 20000,200000 --runs 3 --seconds 6

bench-full: postgres
	@scripts/ensure-bench-tools.sh
	@scripts/ensure-citus.sh
	python3 -m pip install -q -r Server/Tests/python/requirements.txt
	$(SWIFT) build $(SERVER_PACKAGE) -c release --product canopy
	$(SWIFT) build $(SERVER_PACKAGE) -c release --product canopy-floor
	$(SWIFT) build $(SERVER_PACKAGE) -c release --product canopykit-sync
	python3 scripts/bench/bench.py --records 1000000 --scales 100000,1000000,5000000 --runs 5 --seconds 20 --citus-records 200000

# Issue 67's section alone: W1-W4 through the gateway on a Citus cluster
# (a coordinator and two workers) beside one PostgreSQL, 40,000 records each,
# written into BENCHMARKS.md in place of its section (about 6 minutes after
# the release build; make bench runs it last).
bench-citus: postgres
	@scripts/ensure-bench-tools.sh
	@scripts/ensure-citus.sh
	$(SWIFT) build $(SERVER_PACKAGE) -c release --product canopy
	python3 scripts/bench/bench.py --only citus --runs 3 --seconds 6

# Flame graphs of the release gateway under W1 and W2 (issue 39), drawn
# into docs/images/flame-now-w1.svg and -w2.svg from perf's samples, on the
# cluster the last make bench left in .bench; prints CPU by Canopy module.
flamegraphs: postgres
	@scripts/ensure-bench-tools.sh
	@command -v perf >/dev/null || apt-get install -y linux-perf
	$(SWIFT) build $(SERVER_PACKAGE) -c release --product canopy
	scripts/bench/flamegraphs.sh .build/release/canopy now

# The soak (issue 20): RSS, PostgreSQL connections and p99 over 30 minutes
# of queries, batches, sharing, feeds, subscriptions and bad requests;
# exits non-zero on an unexpected error or a trend (docs/RELIABILITY.md).
SOAK_MINUTES ?= 30
soak: postgres
	python3 -m pip install -q -r Server/Tests/python/requirements.txt matplotlib
	$(SWIFT) build $(SERVER_PACKAGE) -c release --product canopy
	python3 scripts/soak/soak.py --minutes $(SOAK_MINUTES) --output-dir docs/soak

# Fuzzing (issue 20): the parsers' modules built with libFuzzer's coverage
# instrumentation (CANOPY_FUZZ=1; Package.swift), then each target for
# FUZZ_SECONDS from Server/Fuzz/Corpus plus what earlier runs found. The build
# shares .build with the server's: the dependencies are compiled once, and
# only Canopy's parser modules and what uses them are compiled again (about
# a minute, where a scratch path of its own took twelve on a clean clone);
# the next ordinary build compiles them again without the instrumentation.
FUZZ_SECONDS ?= 300
fuzz-build:
	CANOPY_FUZZ=1 $(SWIFT) build --package-path Server --scratch-path $(CURDIR)/.build --product canopy-fuzz

fuzz: fuzz-build
	python3 scripts/fuzz/fuzz.py --seconds $(FUZZ_SECONDS) --report docs/fuzz/RESULTS.md

# Generated requests against a live canopy serve (issue 48): GraphQL from
# the schema (hypothesis-graphql) and Web Services bodies, hostile values,
# signed in and anonymous; fails on any INTERNAL_ERROR or 5xx
# (docs/FUZZING.md). make test runs 150 examples with seed 48.
FUZZ_HTTP_EXAMPLES ?= 3000
FUZZ_HTTP_SECONDS ?= 1200
FUZZ_HTTP_SEED ?= $(shell date +%s)
fuzz-http: postgres
	python3 -m pip install -q -r Server/Tests/python/requirements.txt
	$(SWIFT) build $(SERVER_PACKAGE) --build-tests
	CANOPY_GENERATED_SEED=$(FUZZ_HTTP_SEED) CANOPY_GENERATED_EXAMPLES=$(FUZZ_HTTP_EXAMPLES) \
	CANOPY_GENERATED_SECONDS=$(FUZZ_HTTP_SECONDS) scripts/fuzz-http.sh --skip-build

# The sync engines' randomized fault run (issue 50, docs/SYNC_FAULTS.md):
# CanopyJS's and CanopyKit's engines in three device processes, gateways,
# devices and PostgreSQL killed under them, for FAULT_SEEDS (a range) of
# FAULT_STEPS steps each, with each of FAULT_ENGINES (js: CanopyJS devices,
# swift: CanopyKit devices, mixed: both). make test runs seeds 1-3 of 30
# steps, mixed. A failure prints its seed and how to run it again.
FAULT_SEEDS ?= 1-50
FAULT_STEPS ?= 80
FAULT_ENGINES ?= js swift mixed
# Network faults (issue 53): the cut-and-heal cycles of NetworkFaultTests,
# NETWORK_CYCLES of them (make test runs 3); the gateway's connections,
# open files, threads and memory sampled after every heal.
NETWORK_CYCLES ?= 20
network-soak: postgres
	@scripts/ensure-netns.sh
	$(SWIFT) build $(SERVER_PACKAGE) --build-tests
	CANOPY_NETWORK_CYCLES=$(NETWORK_CYCLES) scripts/network-soak.sh --skip-build

fault:
	@scripts/ensure-node.sh
	$(SWIFT) build $(SERVER_PACKAGE) --product canopy
	$(SWIFT) build $(SERVER_PACKAGE) --product canopykit-fault-device
	for engines in $(FAULT_ENGINES); do \
	  CANOPY_BIN=$$($(SWIFT) build $(SERVER_PACKAGE) --show-bin-path)/canopy CANOPY_MIGRATIONS_DIR=$(CURDIR)/migrations \
	  node --experimental-websocket clients/js/test/fault/run.js --seeds $(FAULT_SEEDS) --steps $(FAULT_STEPS) --engines $$engines || exit 1; \
	done

run: postgres build
	@CANOPY_DATA_DIR=$(DATA_DIR) CANOPY_PORT=$(PORT) scripts/run.sh

stop:
	-.build/debug/canopy cluster stop --data-dir $(DATA_DIR)

clean: stop
	rm -rf .build $(DATA_DIR)

# Checks docker-compose.yml (needs docker-compose on PATH).
docker-config:
	POSTGRES_PASSWORD=example CANOPY_GATEWAY_PASSWORD=example docker-compose config -q
