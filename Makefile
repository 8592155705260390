# `make dev` serves the service locally; `make test` proves it. Both install what
# they need, pinned, into a cache shared by every clone, and skip what is there.

PORT ?= 8787
TOOLS ?= $(HOME)/.cache/greylist-tools
WORKER_BUILD_VERSION := 0.8.7
CARGO_FUZZ_VERSION := 0.13.2
SCHEMATHESIS_VERSION := 4.32.5
# wasm-bindgen-cli must be exactly the wasm-bindgen the lock file builds with.
WASM_BINDGEN_VERSION := $(shell sed -n '/^name = "wasm-bindgen"$$/{n;s/^version = "\(.*\)"$$/\1/p;}' Cargo.lock)

WORKER_BUILD := $(TOOLS)/worker-build-$(WORKER_BUILD_VERSION)/bin/worker-build
WASM_BINDGEN := $(TOOLS)/wasm-bindgen-$(WASM_BINDGEN_VERSION)/bin/wasm-bindgen
CARGO_FUZZ := $(TOOLS)/cargo-fuzz-$(CARGO_FUZZ_VERSION)/bin/cargo-fuzz
SCHEMATHESIS := $(TOOLS)/schemathesis-$(SCHEMATHESIS_VERSION)/bin/st
WASM_TARGET := $(shell rustc --print sysroot)/lib/rustlib/wasm32-unknown-unknown
NODE_TOOLS := node_modules/.package-lock.json
WRANGLER := node_modules/.bin/wrangler
# The service deploys as three Workers (deploy/workers.mjs writes their
# configurations from wrangler.toml): the edge, which answers requests, the
# management Worker, which answers the management routes the edge forwards to
# it, and the objects, their Durable Objects. Each is a release module of its
# part of the sources (the `edge`, `manage` and `objects` features), so a
# request's cold start compiles only the edge's code.
DEPLOYABLE := build
EDGE := $(DEPLOYABLE)/edge/index.js
MANAGE := $(DEPLOYABLE)/manage/index.js
OBJECTS := $(DEPLOYABLE)/objects/index.js
WORKERS := $(EDGE) $(MANAGE) $(OBJECTS)
PARTS := edge manage objects
CONFIGS := $(foreach part,$(PARTS),$(DEPLOYABLE)/$(part)/wrangler.json)
# The same worker with the `test-hooks` feature (a clock the tests control), for the
# end-to-end tests only: its own folder, never what is deployed. It shares the
# deployable build's target folder, so the dependencies compile once for both; the
# features change only this crate, and worker-build writes each build its own copy.
# One worker-build at a time (flock), so that under make -j neither reads the
# module the other's cargo just wrote.
TEST_WORKER := build-test/index.js
SOURCES := Cargo.toml Cargo.lock build.rs $(shell find src -name '*.rs')
FLOOR := bench/floor/build/index.js
CHROMIUM := /usr/bin/chromium
IPSET := /usr/sbin/ipset
NFT := /usr/sbin/nft
FAIL2BAN := /usr/bin/fail2ban-server
FAIL2BAN_VERSION := 1.0.2-2
# CrowdSec's own Local API, which `make bench` measures beside the service, and its
# engine, which tests/api/crowdsec_engine.rs runs as an agent against the service.
CROWDSEC_VERSION := 1.4.6-6~deb12u1+b1
CROWDSEC_DIR := $(TOOLS)/crowdsec-$(CROWDSEC_VERSION)
CROWDSEC := $(CROWDSEC_DIR)/usr/bin/crowdsec
# Each deployable module, gzipped at level 9 as `make bench` measures it, may not
# grow past its bound in KiB (deploy-check fails): the build is deterministic, so
# any growth is a change's own. The target is 200 for the edge's, the module a
# request's cold start compiles; lower each bound as its module shrinks. Until
# issue 40 the service was one Worker with one module, whose bound this history is:
# Raised from 400 to 415 for IPv6 (the parser, the registry table, the /64 keys,
# the IPv6 sets of the appliance files): 399.3 before, about 410 with it. Raised
# to 445 for IPv6 in the operator's lists: the writer's chunks, cuts, shards and
# pieces and the isolates' lookups, feed blocks and deltas, each written once
# over the address family, are compiled for 128-bit addresses beside 32-bit ones
# (409.1 before, 446.4 with them). Raised to 515 for the operator's console: a
# fourth Durable Object (the directory of licenses, operator keys and the audit
# log) with its protocol compiled both ways, seven routes and their handlers,
# the holders' picture and the writer's lookup (446.8 before, 513.2 with it;
# answering new licenses and keys without serde's `flatten` saved 2.5 of it).
# Raised to 517 for the route table as one row per route: each handler is a boxed
# future behind a fn pointer (a vtable each, where one match inlined them all);
# 513.2 before, 515.9 with it (naming each alias's handler once saved 0.1).
# Raised to 553 for a holder's own allow list: its three operations and pages on
# eight routes, its rules, rows and history subjects, its place in the precedence
# in the Worker and the object, the feeds' second weighing of the global blocks,
# the object protocol's five new shapes both ways and the directory's flag call;
# 515.9 before, 552.5 with it (issue 40 is to make the module smaller again).
# Raised to 581 for reports of attackers: two routes, the holder's object keeping
# and sending them, a fifth Durable Object class (the report shards) with its
# protocol both ways and its tally, and the lookup's reporters; 552.5 before,
# 580.8 with it.
# Raised to 596 for promotions: the writer's promoted entries (kept through edits
# and imports, exported apart, taken off by the operator), the shards' batches of
# promotions and decays to it on their alarms; 580.8 before, 595.3 with it.
# Raised to 604 for what holders and the operator see of the network: the
# holder's `/api/networkStatus` and the status's promotion settings (595.3 to
# 598.1), then the promoted parts the writer builds beside the global list's
# shards and names in the manifest, the isolates' loads of them, and the JSON
# feed's `source` and the decisions' scenario worked out from them (to 603.1).
# Raised to 661 for CrowdSec engines (machines, issue 38): six calls of the holder's
# object both ways, nine routes, the login, machine tokens under their own key, the
# lenient reading of alerts, Go durations, gzip bodies and the machines' rows;
# 603.1 before, 660.7 with them. Raised to 688 for issue 39's findings: the nft
# keywords a list name may not be (224 words), the credentials' shapes, the IPv6
# forms that carry IPv4, the writer's audit rows kept and forwarded, the keys'
# record in KV with the refusals' tally, and the revocations' object filing in the
# directory (less the directory's key check and revocation, gone); 688.0 with
# them. Raised to 722 for bouncers' and engines' usage metrics (the payloads'
# reading, their days in the holder's object, the pictures' fields) and the audit
# log's filters; 721.3 with them. Lowered to 602 by the objects' calls in postcard
# instead of JSON (each call's and answer's JSON reading and writing gone from
# both sides, 721.3 to 605.8), then by one copy of the call's exchange for every
# call (601.8); `make bench`'s module section breaks the rest down. Raised to 603
# for a small answer carried in a header, which its caller reads with no body to
# wait on (602.4). Lowered to 602 by the operations' and the reports' settling
# and putting back in order written once (601.8). Lowered to 597 by each Durable
# Object exporting only the handlers it has (fetch, and alarm where written),
# where worker-rs's attribute without arguments exported its WebSocket and
# socket handlers too, unused (596.7). Raised to 598 for KV bindings looked up
# only when a read is not answered from the isolate's memory, which takes six
# calls into the runtime off every request the standing or a token's owner
# answers from memory (597.1). Lowered to 597 by worker's own panic hook in place of
# console_error_panic_hook, which added nothing to it (596.9). Raised to 598 for an
# alerts request's log line telling why some of its alerts came to nothing, by
# reason (597.3). Lowered to 597 by KV's text written as its bytes, where
# `KvStore::put` took it through serde_wasm_bindgen (596.8). Then split in two by
# deploying the edge and the objects as two Workers, each module built from its
# half of the sources: the edge's 399.7, the objects' 346.2, where the one was 596.8.
# The edge's raised to 401 for a call the objects of another build refuse told to
# the client as a 503 with Retry-After, not a 500 (399.98, 21 bytes under 400).
# The edge's raised to 402 for a feed's delta that leaves the operator's allow
# list alone when nothing changed and reads only its intervals near a change of
# the blocks (two binary searches a family), where every pull of a holder with
# allow-list entries copied it whole; with a gzipped engine login and a shared
# token's 409 beside it (400.9 before, 401.6).
# The objects' raised to 348 for four fixes of work that grew with a table: a
# feed's delta that drops an entry whose expiry moved (one SQL condition and the
# allow list's check), the report shards' license index, the directory's
# counted licenses (two migrations) and a publication's bounded KV deletes
# (346.8 before, 347.3); the edge came back to 401.5 with the alerts' reader.
# The edge's raised to 403 for what a read found the alerts' reader lacked: a cap
# of 100 000 elements a post with its own 413 (the answer has an id for each, and
# 64 MiB of them would have built a 350 MB answer), and nesting refused where a
# parse of the whole array refuses it (401.5 before, 402.2).
# Both raised for the network no one actor can steer (issue 54): the edge's to
# 431 for five operator routes (the canaries, the review queue with each
# pending promotion's reporters and labels from the shards and the directory, a
# license's standing by PATCH) and the canaries weighed before every report
# (402.7 before, 429.9 with the second read's mends); the objects' to 378 for the shards' rechecks, standings
# and votes, the holders' standings told to every shard, the directory's
# canaries and the writer's review queue (347.3 before, 376.2 with the counts
# by index, 377.4 with each standing change's audit row kept by the holder's
# object until the directory has it). Most of it is the new calls' futures; issue 59 is where the edge's
# size is worked down.
# The objects' raised to 380 for the house read by its names (issue 55): the
# holder's object dispatch split into one file a job, the precedence's
# answers (Verdict::ForObject, Holding) and the callers' types carried into the
# objects' protocols (377.4 before, 379.2); the edge came down to 427.8.
# The edge's raised to 440 for a gzip body inflated in the Worker a piece at a
# time, stopping at the route's limit (issue 56: the runtime's DecompressionStream
# inflated a refused body whole while it was drained): miniz_oxide's inflater
# (427.8 before, 438.6). The objects' stay at 380 with the usage reports
# gathered to a write a minute (379.8).
# Both raised for the holder's own Cloudflare edge (issue 57): the edge to 450
# for its three routes and the status it passes on (438.6 before, 447.8); the
# objects to 445 for the sync itself (its async steps are most of it: the
# alarm's future alone is 42 KB before gzip), Cloudflare's API client (through
# the runtime's own fetch: `worker::Fetch` and `Request` cost 8 KiB more), the
# sealed token, the accounts' turns, the account's cap approached by halves and
# the hourly look (379.8 before, 442.8). Issue 59 takes the edge down again.
# The edge to 455 for merged feeds (issue 58): the run merger, the feeds' merged
# heads and tags, and the feed tokens' merge setting (447.8 before, 450.1).
# The objects to 470 when the holders' objects came to read the operator's lists'
# snapshots for a Cloudflare list of the scope `all` and both allow lists (the
# snapshot store, its shards' decoding and the precedence's cuts, which only
# the edge carried before: 442.8 before, 467.2).
# The edge to 466 for cut feeds (issue 58): the cut's counts, bounds and shifts,
# the feed's items read apart from its body (and again for a count), the delta's
# stages that move a cut, the cursors' and positions' cut, and the tokens'
# maxItems (450.1 before, 464.2); the objects to 472 for the tokens' cut, what
# their last pull left out and the positions' cut (470.1 before, 470.4).
# The edge to 468 for a delta's relabeled blocks and the stream's maxItems
# parameter (issue 58: the promoted part's change in pieces, the blocks named
# again, the shift from a held cut; 464.2 before, 467.3 in CI's build).
# The edge lowered to 363 by the management Worker (issue 59): the operator's
# API and a holder's management routes (list, history, quota, activity, feed
# tokens, machines, the Cloudflare link) answered there and forwarded to it by
# the edge, which keeps only the count of operator calls without ADMIN_TOKEN
# (465.5 before, 361.0 with it, on this machine's build; CI's is about 2 KiB
# more). The management Worker's bound, 468, is the edge's before: it builds
# every route. CrowdSec's engines' routes stay at the edge: they count rate
# limits, which `wrangler dev` 4.86 takes from every Worker but its first.
# The edge lowered to 352 and the management Worker to 457 by access and
# machine tokens signed and checked in a few lines of our own over the hmac
# and sha2 the service had already, in place of jwt-compact (the edge 361.0
# to 349.9, the management Worker 465.4 to 453.5; CI's builds about 2 KiB more).
# The management Worker lowered to 300 by building it without the edge's rows
# (453.5 to 296.7): they were its module's and its build's largest part. The
# edge raised to 354 by a cut stream's recount when its list changed between
# the count and the pull (the count's own function and loop, the pull's
# history number): CI's build 352.7. The edge to 356 and the objects to 474
# when the modules came to be optimized by one wasm-opt pass, not two (0.6 to
# 0.8 KiB more each, for 24 s less of one core a Worker; BUILD_ENV, below).
# The edge lowered to 336 when its build left out the operator's proof, which
# only the management Worker's routes ask for and which the edge kept inlined
# in its entry future (352.2 to 337.4), and the objects' answers in JSON were
# read as KV's values are, one reader where there were two (to 333.3). To 326
# when the stream's scenario filters came to fold ASCII letters only, as
# CrowdSec's Local API on SQLite does, with no Unicode case tables (322.9).
# To 299 (issue 59's 300 this turn) when the management Worker came to answer
# the logins, the usage reports, the network lookups and a holder's allow-list
# calls, the edge counting each first (src/http/auth/arrival.rs): 296.6. The
# management Worker to 354 for them (351.1): no request to a list, a feed or
# a bouncer's pull crosses to it, and it has no size target of its own.
EDGE_GZIP_KIB := 299
MANAGE_GZIP_KIB := 354
OBJECTS_GZIP_KIB := 474
CUSTOM_BOUNCER := /usr/bin/crowdsec-custom-bouncer
CUSTOM_BOUNCER_VERSION := 0.0.15-3+b2
FIREWALL_BOUNCER := /usr/bin/crowdsec-firewall-bouncer
FIREWALL_BOUNCER_VERSION := 0.0.25-4~deb12u1
BUILD_ENV := WASM_BINDGEN_BIN=$(WASM_BINDGEN) WASM_OPT_BIN=$(CURDIR)/node_modules/.bin/wasm-opt
# The deployable modules are optimized once, by our own wasm-opt pass without the
# names section (about a fifth smaller than with it), from worker-build's output
# unoptimized (`--no-opt`): worker-build's own pass (-Oz, names kept) took 24 s a
# Worker on these machines and ours 8 more on its output, for 0.8 KB of gzipped
# edge. `make bench`'s breakdown (bench/size.mjs) and profile need the function
# names: they optimize the kept unoptimized copy the same way with the names kept
# (target/<part>_bg.named.wasm), in `make bench` only.
WASM_FEATURES := $(addprefix --enable-,mutable-globals sign-ext nontrapping-float-to-int bulk-memory multivalue reference-types exception-handling)

export WRANGLER_SEND_METRICS := false

# The tools cargo installs share one target folder, so the dependencies they have in
# common compile once, and build without optimisation: worker-build and cargo-fuzz
# only start other programs, and wasm-bindgen rewrites this service's module in
# 1.1 s where its opt-level 1 build took 0.4, while it installs in 46 s instead of
# that build's 140 to 160 on 2 cores.
TOOL_INSTALL = CARGO_TARGET_DIR=$(TOOLS)/cargo-target CARGO_PROFILE_RELEASE_OPT_LEVEL=0 cargo install

.PHONY: tools each-tool test-tools each-test-tool build build-edge build-test named dev deploy test workers lint unit e2e contract browser fuzz deploy-check bench breaks screenshots clean

# Installs run side by side (make -j): the cargo builds take the cores while npm,
# pip and apt wait on the network and the disk. Cargo's own lock keeps its builds one
# at a time; the Debian packages come in one apt run, which holds dpkg's lock.
PARALLEL_INSTALL = $(MAKE) --no-print-directory -j4 --output-sync=target

tools:
	@$(PARALLEL_INSTALL) each-tool

each-tool: $(WORKER_BUILD) $(WASM_BINDGEN) $(WASM_TARGET) $(NODE_TOOLS)

$(WORKER_BUILD):
	$(TOOL_INSTALL) --root $(TOOLS)/worker-build-$(WORKER_BUILD_VERSION) worker-build --version $(WORKER_BUILD_VERSION)

# --locked fails for this version (its lock file no longer resolves), so it is installed without it.
# Without default features: they add a TLS stack (rustls and ring) that only its test runner's downloads use.
$(WASM_BINDGEN):
	$(TOOL_INSTALL) --root $(TOOLS)/wasm-bindgen-$(WASM_BINDGEN_VERSION) wasm-bindgen-cli --version $(WASM_BINDGEN_VERSION) --no-default-features

$(CARGO_FUZZ):
	$(TOOL_INSTALL) --root $(TOOLS)/cargo-fuzz-$(CARGO_FUZZ_VERSION) cargo-fuzz --version $(CARGO_FUZZ_VERSION)

$(SCHEMATHESIS):
	python3 -m venv $(TOOLS)/schemathesis-$(SCHEMATHESIS_VERSION)
	$(TOOLS)/schemathesis-$(SCHEMATHESIS_VERSION)/bin/pip install --quiet schemathesis==$(SCHEMATHESIS_VERSION)

# Debian's packages, in one apt run: the browser (Playwright's own download cannot
# reach its host from these machines), the real ipset and nft for the agent's and
# the appliance files' tests in network namespaces, fail2ban for its greylist
# action's end-to-end test, and CrowdSec's bouncers for the decision stream's
# end-to-end tests: the one that runs a script per decision and the firewall
# bouncer in nftables mode. fail2ban and the bouncers come without their
# recommends: fail2ban's are backends and tools its test does not use (it reads
# a log file and calls the service), and the bouncers' pull crowdsec itself,
# whose post-install fails offline and leaves dpkg broken.
DEBIAN_TOOLS := $(CHROMIUM) $(IPSET) $(NFT) $(FAIL2BAN) $(CUSTOM_BOUNCER) $(FIREWALL_BOUNCER)
$(DEBIAN_TOOLS) &:
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ipset nftables \
		fail2ban=$(FAIL2BAN_VERSION) crowdsec-custom-bouncer=$(CUSTOM_BOUNCER_VERSION) crowdsec-firewall-bouncer=$(FIREWALL_BOUNCER_VERSION)

$(WASM_TARGET):
	rustup target add wasm32-unknown-unknown

$(NODE_TOOLS): package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

# What `make deploy` uploads is what this leaves in build/ (and `wrangler dev`'s
# build command for the edge runs it), and make trusts a build/ newer than the
# sources: so the check that no test hook is in it runs every time, not only when
# a worker is built. A build/ the test build was copied or built into is refused
# here, before any deploy.
build: $(WORKERS) $(CONFIGS)
	@! grep -r -l -a -F '/__test/' $(DEPLOYABLE) || { echo "build: $(DEPLOYABLE)/ carries test hooks: remove it and build again"; exit 1; }

build-test: $(TEST_WORKER)

# make test's background build of the Workers, one after the other: they share
# the wasm target's compiled dependencies. The test build first, which the
# end-to-end tests wait for; then the three deployable ones, clippy's too (the
# test build's code is lint's, with the test hooks), which only the contract
# run and deploy-check need.
workers:
	@$(MAKE) --no-print-directory build-test build-edge build WORKER_LINT='$(CLIPPY)'

# Set by `workers`: clippy, with warnings as errors, as this crate's compiler in
# the three Workers' release builds (empty for `make dev` and `make deploy`, whose
# builds a new lint must not stop).
WORKER_LINT ?=

# The edge's Worker alone: `make test` builds it after the test build and before
# the management Worker's and the objects', in the background (`workers`).
build-edge: $(EDGE)

# A release module in $(1), built with cargo's arguments $(2); its unoptimized
# copy, which `make bench` names, as $(3).
define RELEASE_BUILD
	@mkdir -p target
	flock target/.worker-build.lock env $(WORKER_LINT) $(BUILD_ENV) $(WORKER_BUILD) --release --no-opt --out-dir $(1) $(if $(2),-- $(2))
	cp $(1)/index_bg.wasm $(3)
	node_modules/.bin/wasm-opt $(1)/index_bg.wasm $(WASM_FEATURES) -Oz -o $(1)/index_bg.wasm
endef

$(DEPLOYABLE)/%/index.js target/%_bg.unoptimized.wasm: $(SOURCES) | tools
	$(call RELEASE_BUILD,$(DEPLOYABLE)/$*,--no-default-features --features $*,target/$*_bg.unoptimized.wasm)

# Each Worker's module as it deploys, with its function names (worker-build's
# own pass's flags: -Oz and --debuginfo), for bench/size.mjs and
# bench/profile.mjs: `make bench` makes them, `make named` alone.
NAMED := $(foreach part,$(PARTS),target/$(part)_bg.named.wasm)
named: $(NAMED)
$(NAMED): target/%_bg.named.wasm: target/%_bg.unoptimized.wasm
	node_modules/.bin/wasm-opt $< $(WASM_FEATURES) -Oz --debuginfo -o $@

# Each Worker reads the clone's one .dev.vars in local development: wrangler looks
# for it beside each configuration.
$(CONFIGS) &: wrangler.toml deploy/workers.mjs $(WORKERS) | tools
	node deploy/workers.mjs $(DEPLOYABLE)
	@for part in $(PARTS); do ln -sfn ../../.dev.vars $(DEPLOYABLE)/$$part/.dev.vars; done

$(TEST_WORKER): $(SOURCES) | tools
	@mkdir -p target
	flock target/.worker-build.lock env $(BUILD_ENV) $(WORKER_BUILD) --release --no-opt --out-dir build-test -- --features test-hooks

$(FLOOR): bench/floor/Cargo.toml bench/floor/Cargo.lock bench/floor/src/lib.rs | tools
	cd bench/floor && $(BUILD_ENV) $(WORKER_BUILD) --release

# Never overwrites an existing .dev.vars.
.dev.vars:
	@printf 'JWT_SECRET=%s\nADMIN_TOKEN=%s\nCACHE_SECONDS=0\nCLOUDFLARE_TOKEN_KEY=%s\n' \
		"$$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')" "$$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')" \
		"$$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')" > $@
	@echo "Wrote .dev.vars with a random JWT_SECRET, ADMIN_TOKEN and CLOUDFLARE_TOKEN_KEY."

dev: build .dev.vars
	@grep -q '^CLOUDFLARE_TOKEN_KEY=' .dev.vars || { printf 'CLOUDFLARE_TOKEN_KEY=%s\n' "$$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')" >> .dev.vars; echo "Added a random CLOUDFLARE_TOKEN_KEY to .dev.vars (the holders' Cloudflare tokens are sealed under it)."; }
	@echo "Holder page: http://127.0.0.1:$(PORT)/   Operator page: http://127.0.0.1:$(PORT)/admin/ (admin token in .dev.vars)"
	@echo "Create a license:  curl -s -X POST http://127.0.0.1:$(PORT)/admin/licenses -H \"Authorization: Bearer $$(sed -n 's/^ADMIN_TOKEN=//p' .dev.vars)\""
	node deploy/with-vars.mjs build/manage/wrangler.json build/manage/wrangler.dev.json $(if $(IPV6),IPV6=$(IPV6))
	$(WRANGLER) dev -c build/edge/wrangler.json -c build/manage/wrangler.dev.json -c build/objects/wrangler.json --ip 127.0.0.1 --port $(PORT) \
		--persist-to .wrangler/state $(if $(IPV6),--var IPV6:$(IPV6))

# The objects first: the edge's and the management Worker's calls name them in the
# objects' Worker, whose new classes and migrations must be there before them;
# then the management Worker, which the edge's service binding names; then the
# edge. A step can follow one that failed only once that is mended
# (docs/operations.md, "Upgrade").
deploy: build
	$(WRANGLER) deploy -c build/objects/wrangler.json
	$(WRANGLER) deploy -c build/manage/wrangler.json
	$(WRANGLER) deploy -c build/edge/wrangler.json

TEST_PHASES := test-tools lint unit e2e contract browser deploy-check
# Phases that run in the background, each as `phase:from:by`: started when the
# foreground phase `from` starts, and done before `by` starts (make test waits
# for it there, and stops there when it failed). The Workers' builds (`workers`:
# the test build for e2e and browser first, then the edge's alone, which proves
# it needs none of the objects' code, the management Worker's and the objects',
# for contract and deploy-check) are mostly single-threaded stretches (the link,
# LTO, wasm-opt), for the wasm target, in folders of their own: they go beside
# lint and the unit tests, which build natively, and fill what those leave idle.
# The end-to-end tests start once lint and the unit tests are done (their make
# finds the test build made, or waits for it on the builds' lock), beside what
# is left of the deployable builds: until 2026-12-07 they waited for all four,
# and on a fresh machine that wait was 90 s of a 926 s run. (Until 2026-12-07
# too the edge's build ran in the foreground between lint and unit, and a quick
# fuzz beside them, whose build took a core for most of its 285 s on a fresh
# machine; its seeds are now replayed by the unit tests, tests/fuzz_seeds.rs,
# and `make fuzz` fuzzes on demand.)
BESIDE := workers:lint:contract

# Every phase in order, each timed; the times are printed at the end, or where a
# phase failed. Each background phase runs in a process group of its own, its
# output kept in target/<phase>.log and shown when it is waited for (its last 60
# lines when it failed); a failure in the foreground, or an interrupt, stops them.
test:
	@times=""; start=$$(date +%s); jobs=""; failed=""; mkdir -p target; \
	stop() { for job in $$jobs; do kill -TERM -$${job%%:*} 2>/dev/null; done; }; \
	trap 'stop; exit 130' INT TERM; \
	settle() { left=""; for job in $$jobs; do pid=$${job%%:*}; rest=$${job#*:}; name=$${rest%%:*}; \
		if [ $${rest#*:} != $$1 ]; then left="$$left $$job"; continue; fi; \
		if wait $$pid; then cat target/$$name.log; else tail -n 60 target/$$name.log; failed="$$failed $$name"; fi; \
		times="$$times  $$name: $$(cat target/$$name.took 2>/dev/null || echo ?) s (in the background)\n"; \
	done; jobs=$$left; }; \
	for phase in $(TEST_PHASES); do \
		settle $$phase; \
		if [ -n "$$failed" ]; then stop; printf "\nmake test:$$failed failed\n$$times"; exit 1; fi; \
		for job in $(BESIDE); do \
			name=$${job%%:*}; rest=$${job#*:}; [ $${rest%%:*} = $$phase ] || continue; \
			setsid sh -c 'begun=$$(date +%s); "$$0" --no-print-directory "$$1" > "target/$$1.log" 2>&1; status=$$?; \
				echo $$(( $$(date +%s) - begun )) > "target/$$1.took"; exit $$status' "$(MAKE)" $$name & \
			jobs="$$jobs $$!:$$name:$${rest#*:}"; \
		done; \
		begun=$$(date +%s); \
		$(MAKE) --no-print-directory $$phase; status=$$?; \
		times="$$times  $$phase: $$(( $$(date +%s) - begun )) s\n"; \
		if [ $$status -ne 0 ]; then stop; printf "\nmake test: $$phase failed\n$$times"; exit $$status; fi; \
	done; \
	[ -z "$$jobs" ] || { echo "make test: background phases never waited for:$$jobs"; stop; exit 1; }; \
	printf "\nmake test took $$(( $$(date +%s) - start )) s:\n$$times"

# What the test phases need beyond the build's tools, installed once. CrowdSec's
# package comes after the others: both take apt's lock.
test-tools:
	@$(PARALLEL_INSTALL) each-test-tool
	@$(MAKE) --no-print-directory $(CROWDSEC)

each-test-tool: each-tool $(SCHEMATHESIS) $(DEBIAN_TOOLS)

# The code as rustfmt writes it, and clippy clean with the test hooks in native
# builds: the tests' build, whose crate library (a cdylib too, so its file has
# no hash of its features) the unit and end-to-end tests then run, building
# nothing again. Clippy runs as this crate's compiler, as `cargo clippy` itself
# runs it (clippy-driver as the workspace's wrapper, its arguments in
# CLIPPY_ARGS): `cargo clippy` checks every dependency in a mode of its own,
# which no build reuses, where these builds leave the dependencies that the
# unit and end-to-end tests then use (lint and the unit tests' build took 132 s
# from nothing on 2 cores, 152 with `cargo clippy`). Each Worker's part without
# the test hooks, for the Worker's target, is clippy's in `make test`'s `workers`
# (WORKER_LINT): the edge's release build alone proves that the edge needs none
# of the objects' own code (the objects need nothing of the edge's because
# nothing below `http` may use it, tests/layers.rs), and clippy then sees the
# lines for that target only (platform/log.rs, the runtime's console). Until
# 2026-12-07 lint built the edge's half natively first, a third build of the
# crate on lint's path.
CLIPPY := RUSTC_WORKSPACE_WRAPPER=clippy-driver CLIPPY_ARGS=-D__CLIPPY_HACKERY__warnings
lint:
	cargo fmt --check
	$(CLIPPY) cargo test --no-run --lib --tests --features test-hooks --quiet

# The rules and stores natively, the check that no module imports from a layer above its own
# and no two files import each other, the check that the name of the calls' shape covers
# every source that can shape them (build.rs), and the checks that the docs tell the
# truth (docs/architecture.md names every source file and no file that is gone; no text
# names a file, a count of Durable Objects or a module's bound the code does not have),
# and every fuzzing target's check on its kept seeds.
# They run as lint built them (clippy as this crate's compiler, the test hooks
# on), so that they build nothing lint has not: a build of the crate of its own
# took most of this phase. The code without the hooks is clippy's in the edge's
# and objects' release builds (`workers`); its rules are the same code.
unit:
	$(CLIPPY) cargo test --features test-hooks --lib --test layers --test call_shape --test docs --test fuzz_seeds

# The tests spend most of their time waiting on the server, so they run eight at
# a time on two cores: at six, the stretch where the Cloudflare tests wait on
# the real clock's pushes left both cores idle for half a minute (245 s for the
# suite, 235 at eight). They run the test build, whose clock they move;
# CrowdSec's engine comes from the package test-tools unpacks.
e2e: $(TEST_WORKER)
	CROWDSEC_DIR='$(CROWDSEC_DIR)' $(CLIPPY) cargo test --features test-hooks --test api -- --test-threads=8

# No 5xx, and no response that breaks public/openapi.json.
contract: build $(SCHEMATHESIS)
	tests/contract.sh $(SCHEMATHESIS)

# The dashboard in headless chromium, on the test build with its clock at 06:00 UTC;
# screenshots land in target/screenshots/.
# The files by a glob (`node --test <folder>` fails on Node 21 and later), after a
# check that Debian's chromium is the version the pinned playwright-core drives;
# both at once, each on a server of its own (99 s where one after the other took 108).
browser: $(TEST_WORKER) $(CHROMIUM) $(NODE_TOOLS)
	node tests/browser/check-chromium.mjs $(CHROMIUM)
	node --test --test-concurrency=2 tests/browser/*.test.mjs

# The screenshots in docs/, made by the browser suite on a service of their own
# with data a customer could have: each view of the holder's page
# (docs/holder-<view>.png) and of the operator's console (docs/console-<view>.png).
HOLDER_VIEWS := overview list allow report feeds engines cloudflare history
CONSOLE_VIEWS := overview licenses license lists lookup keys audit
screenshots: $(TEST_WORKER) $(CHROMIUM) $(NODE_TOOLS)
	node --test tests/browser/screenshots.test.mjs
	for view in $(HOLDER_VIEWS); do cp target/screenshots/holder-$$view-desktop.png docs/holder-$$view.png || exit 1; done
	cp target/screenshots/holder-overview-dark.png docs/holder-overview-dark.png
	for view in $(CONSOLE_VIEWS); do cp target/screenshots/console-$$view-desktop.png docs/console-$$view.png || exit 1; done

# libFuzzer needs nightly-only sanitizer flags; these machines have only the stable
# toolchain, and RUSTC_BOOTSTRAP lets it accept them for this build alone. Each target
# (fuzz/fuzz_targets/, its check in fuzz/checks/) first replays its kept seeds
# (fuzz/seeds/<target>), then fuzzes for its share of FUZZ_SECONDS, ten minutes by
# default, with AddressSanitizer (about 200 s to build from nothing on 2 cores;
# FUZZ_BUILD="--dev --sanitizer none" builds in 75). New inputs it finds land in
# target/fuzz-corpus/<target>; one that fails goes to fuzz/artifacts/<target>/ (not
# kept in git), and into fuzz/seeds/<target>/ once mended: the unit tests replay
# the seeds (tests/fuzz_seeds.rs).
FUZZ_TARGETS := form_and_token bulk import feed_query snapshot authorization
FUZZ_SECONDS ?= 600
FUZZ_BUILD ?=
FUZZ_EACH = $$(( $(FUZZ_SECONDS) / $(words $(FUZZ_TARGETS)) + 1 ))

fuzz: $(CARGO_FUZZ)
	@for target in $(FUZZ_TARGETS); do \
		mkdir -p target/fuzz-corpus/$$target; \
		RUSTC_BOOTSTRAP=1 $(CARGO_FUZZ) run --fuzz-dir fuzz $(FUZZ_BUILD) $$target target/fuzz-corpus/$$target fuzz/seeds/$$target -- \
			-max_total_time=$(FUZZ_EACH) 2> target/fuzz-$$target.log \
			|| { tail -n 60 target/fuzz-$$target.log; echo "fuzz: $$target failed"; exit 1; }; \
		echo "fuzz $$target: $$(tail -n 1 target/fuzz-$$target.log)"; \
	done

# Catches a broken production configuration (bindings, migrations, compatibility date),
# and a deployable bundle that carries a test hook: the test build's paths must be
# in build-test/ (so that the search can find them) and nowhere in what deploys.
# wrangler reads --outdir from the configuration's folder: it is given whole, and the
# check first makes sure each bundle is there to look in. The edge's dry run must
# say that it built nothing: a deploy uploads the edge built with the objects.
# Between a deployment's two steps, a call the objects refuse is a 503 to try
# again (tests/upgrade.sh).
deploy-check: build $(TEST_WORKER)
	rm -rf target/deploy-dry-run target/deploy-dry-run-*.log
	for half in objects manage edge; do $(WRANGLER) deploy --dry-run -c build/$$half/wrangler.json --outdir $(CURDIR)/target/deploy-dry-run/$$half > target/deploy-dry-run-$$half.log 2>&1 || { cat target/deploy-dry-run-$$half.log; exit 1; }; done
	@grep -q -x -F '[custom build] the edge as make built it, with no build of its own' target/deploy-dry-run-edge.log || { cat target/deploy-dry-run-edge.log; echo "deploy-check: deploying the edge builds it again, and may upload another build than the objects'"; exit 1; }
	@grep -q -a -F '/__test/' build-test/index_bg.wasm || { echo "deploy-check: the test build has no test hooks to look for"; exit 1; }
	@for half in objects manage edge; do ls target/deploy-dry-run/$$half/*.wasm > /dev/null 2>&1 || { echo "deploy-check: wrangler wrote no $$half bundle to look in"; exit 1; }; done
	@! grep -r -l -a -F '/__test/' target/deploy-dry-run || { echo "deploy-check: the deployable bundle carries test hooks"; exit 1; }
	node tests/module-size.mjs $(EDGE_GZIP_KIB) $(MANAGE_GZIP_KIB) $(OBJECTS_GZIP_KIB)
	tests/upgrade.sh

# Each guarantee's test, run with the guarantee broken on purpose (tests/breaks/*.patch):
# each break's tests must pass on the unbroken tree, then fail with the patch applied,
# for a test's reason (a failing assertion or the check's own message; not a build
# error, a missing tool or a server that did not start). It installs what the tests
# need (test-tools). On demand, not in make test: it rebuilds the worker for each
# break and the whole set takes hours, so ONLY="08 112" runs a subset (a number is
# that patch, 01..150 those numbered so, stale those whose row is older than a
# change to the files it stands on, other text a prefix of names). Each run replaces its patches' rows in
# tests/breaks/RESULTS.md (patch, clean and broken result, the failing assertion).
ONLY ?=
breaks: test-tools
	tests/breaks/run $(ONLY)

# The service against the runtime's floors, through Miniflare and on workerd's own
# socket, what each operation costs (counted by the test build), and CrowdSec's
# Local API side by side; writes bench/results.json. BENCH_ONLY=a,b runs a subset
# (bench/README.md names them) and writes target/bench-results.json instead.
bench: build build-test $(NAMED) $(FLOOR) $(CROWDSEC)
	@command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk; }
	CROWDSEC_BIN=$(CROWDSEC_DIR)/usr/bin node bench/run.mjs

# The package's files only, unpacked once: installing it runs a post-install that
# fails offline and leaves dpkg half-configured.
$(CROWDSEC):
	rm -rf $(CROWDSEC_DIR) $(CROWDSEC_DIR).tmp && mkdir -p $(CROWDSEC_DIR).tmp
	apt-get update -qq && cd $(CROWDSEC_DIR).tmp && apt-get download -qq crowdsec=$(CROWDSEC_VERSION)
	dpkg -x $(CROWDSEC_DIR).tmp/crowdsec_*.deb $(CROWDSEC_DIR).tmp/tree
	mv $(CROWDSEC_DIR).tmp/tree $(CROWDSEC_DIR) && rm -rf $(CROWDSEC_DIR).tmp

clean:
	rm -rf build build-test target .wrangler bench/floor/build bench/floor/target
