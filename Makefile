# TriBridRAG front door. `make demo` and `make test` do all set-up on a fresh machine.
SHELL := /bin/bash
PY_BOOT ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PROTO_SRC := $(wildcard protos/tribrid/v1/*.proto)
PROTO_OUT := tribrid/v1/.generated
# The embedding model as ONNX (embedding.runtime = "onnx"), exported from the installed model
ONNX_MODEL := $(VENV)/share/tribrid/models/all-MiniLM-L6-v2.onnx
ONNX_INT8 := $(VENV)/share/tribrid/models/all-MiniLM-L6-v2.int8.onnx
# The console's graph library, fetched at install (below)
CONSOLE := services/bridge/console
CONSOLE_VENDOR := $(CONSOLE)/static/vendor/cytoscape.min.js

.PHONY: install protos up down serve stop status demo test lint unit clean bench-index certs

install: $(STAMP) $(PROTO_OUT) $(ONNX_MODEL) $(ONNX_INT8) $(CONSOLE_VENDOR) browser

# The console's graph library (cytoscape.js) from the npm registry, at the version package-lock.json
# pins, into the git-ignored static/vendor/ (never committed, never from a CDN). Without npm the
# console still serves every page but the graph explorer cannot draw.
$(CONSOLE_VENDOR): $(CONSOLE)/package.json $(CONSOLE)/package-lock.json
	@if command -v npm >/dev/null; then \
		rm -rf build/console-npm && mkdir -p build/console-npm $(@D) && cp $^ build/console-npm/ && \
		npm ci --prefix build/console-npm --no-audit --no-fund --loglevel=error && \
		cp build/console-npm/node_modules/cytoscape/dist/cytoscape.min.js $@; \
	else echo "console: no npm, so no cytoscape.js: the graph explorer cannot draw"; fi

.PHONY: console-screenshots
# The console's browser tests, writing a screenshot of each view into docs/console/.
console-screenshots: install
	TRIBRID_CONSOLE_SCREENSHOTS=docs/console $(BIN)/pytest -q tests/e2e/test_console.py

.PHONY: browser
# Debian's Chromium for the console's browser tests (Playwright drives it); without apt-get or
# without the right to use it, the browser tests skip and say why.
browser:
	@command -v chromium >/dev/null || { command -v apt-get >/dev/null && \
		{ apt-get install -y -q chromium || { apt-get update -q && apt-get install -y -q chromium; }; }; } || \
		echo "browser: chromium not installed: the console's browser tests will skip"

$(STAMP): pyproject.toml
	test -x $(PY) || $(PY_BOOT) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch is pinned exactly: that version installs from a local file; a range pulls a CUDA build
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

# Export the installed embedding model to ONNX (a few seconds; skipped when up to date): into
# embedding.onnx_path, by default $(ONNX_MODEL), and its int8 copy beside it (vector.query_model).
# Needs torch and onnx, only here.
.PHONY: onnx-model
onnx-model: $(STAMP)
	$(PY) -m tribrid.onnx_embedding export

$(ONNX_MODEL) $(ONNX_INT8) &: $(STAMP)
	$(PY) -m tribrid.onnx_embedding export

protos: $(PROTO_OUT)

$(PROTO_OUT): $(PROTO_SRC) $(STAMP) services/bridge/openapi.py services/bridge/contract.py
	mkdir -p tribrid/v1
	# google/api/*.proto (HTTP routes) come with googleapis-common-protos
	PATH=$(CURDIR)/$(BIN):$$PATH $(PY) -m grpc_tools.protoc -Iprotos -I$$($(PY) -c 'import google.api.annotations_pb2 as a, pathlib; print(pathlib.Path(a.__file__).parents[2])') --python_out=. --grpc_python_out=. --mypy_out=. --mypy_grpc_out=. $(PROTO_SRC)
	touch tribrid/v1/__init__.py
	# the HTTP bridge's OpenAPI document, from the descriptors and the .proto comments
	$(PY) -m services.bridge.openapi tribrid/v1/openapi.json
	touch $(PROTO_OUT)

up: install
	$(BIN)/tribrid up

down:
	test ! -x $(BIN)/tribrid || $(BIN)/tribrid down

serve: up
	$(BIN)/tribrid serve all --background

stop:
	test ! -x $(BIN)/tribrid || $(BIN)/tribrid stop

status: install
	$(BIN)/tribrid status

# A local CA and a server certificate for 127.0.0.1/localhost in .state/certs, to try TLS out.
certs: install
	$(BIN)/tribrid certs

demo: serve
	$(BIN)/tribrid demo

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy tribrid services tribridctl evaluation tests bench

# Tests that need no store or service (tests/unit): seconds, and nothing is started.
unit: install
	$(BIN)/pytest -q tests/unit

# Lint, then every test: unit, integration (the real stores, the services in-process) and e2e
# (processes: the CLI, `tribrid serve`, kills and restarts; fuzz campaigns; deploy manifests).
test: install lint
	$(BIN)/pytest -q

.PHONY: fuzz
# The long fuzz campaign: FUZZ_EXAMPLES random requests per RPC (12 RPCs, ListCorpora takes no input: > 10,000
# in all), then a table of the answers per RPC and status code; then the bridge's HTTP operations
# from its OpenAPI document (schemathesis), FUZZ_EXAMPLES each.
FUZZ_EXAMPLES ?= 1000
fuzz: install
	TRIBRID_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/pytest -q -s tests/e2e/test_fuzz.py tests/e2e/test_bridge_fuzz.py

# Cold then unchanged index of a real repository (networkx, ~580 files); PATH_TO_INDEX=... to choose another.
bench-index: up
	$(PY) -m bench.bench_index $(if $(PATH_TO_INDEX),--path $(PATH_TO_INDEX),)

.PHONY: bench-docgraph bench-docsearch
# SIMILAR_TO for 10k chunks: the exact kNN join and the write to an embedded FalkorDB.
bench-docgraph: install
	$(PY) -m bench.bench_document_graph

# The graph leg's document search and expansion, p50/p99, read from memory and from FalkorDB, on a
# synthetic graph of 3,000 chunks and 1,000 named entities (bench/bench_document_search.py).
# Self-contained: its own stores under /tmp/tribrid-bench-docsearch.
bench-docsearch: install
	$(PY) -m bench.bench_document_search

clean: stop down
	rm -rf $(VENV) tribrid/v1 .state

.PHONY: reader
# The learned question reader (tribrid/question/learned.py): its examples from evals/ (the tuning
# wordings, the question banks, how-to and prose queries), then its weights fitted with scikit-learn
# into tribrid/question/reader_weights.npz, which the services load at start.
reader: install
	$(PY) -m evaluation.question_examples
	$(PY) -m evaluation.reader_model

.PHONY: eval eval-entities eval-expansion eval-sets eval-sets-langs fusion-lab load

# Retrieval quality per leg and fused on ast-derived query sets (evals/sets/; see evals/README.md).
# SETS="docstring identifier" / LEGS="sparse fusion" to narrow it down.
eval: serve
	$(PY) -m evaluation.run $(if $(SETS),--sets $(SETS),) $(if $(LEGS),--legs $(LEGS),)

# Every leg's whole list per query (no re-index), then the same lists fused by each rule in
# bench/fusion_lab.py: nDCG@10 per set and rule, next to the best single leg.
fusion-lab: serve
	$(PY) -m evaluation.run --no-index --top-k 30 --keep-lists --out .state/fusion-lab
	$(PY) -m bench.fusion_lab .state/fusion-lab/eval-latest.json

# Leg weights and rrf_k per query kind learned from judged queries by k-fold cross-validation
# (evaluation/tune.py, docs/tuning.md): make tune FILE="a.jsonl b.jsonl" CORPUS=myrepo [OUT=tune.toml].
# Writes a config snippet and its report beside it; never the running config.
.PHONY: tune
tune: serve
	$(PY) -m evaluation.tune $(FILE) --corpus $(CORPUS) --out $(or $(OUT),tune.toml)

# Rebuild evals/sets/ from the installed click + httpx (deterministic: sorted, seeded).
eval-sets: install
	$(PY) -m evaluation.build_sets

# Graph expansion's effect on the document sets (bench/bench_expansion.py): fused with and without
# it (both placements), nDCG@10 and R@20, the questions it changed; writes evals/results/expansion-*.
# SETS="faq-sed" / PLACEMENTS="append" to narrow it down.
# The entity sets (evals/entities/): index the two novels, import their graphs, then each leg and
# the gateway with the graph on and off, by split (tune / held_out).
eval-entities: serve
	$(PY) -m evaluation.entity_sets

eval-expansion: serve
	$(PY) -m bench.bench_expansion $(if $(SETS),--sets $(SETS),) $(if $(PLACEMENTS),--placements $(PLACEMENTS),)

# The held-out TypeScript (rxjs) and Java (the JDK's java.net.http) structural sets: npm-installs
# typescript into .state/eval-unseen/npm, fetches both code bases (npm pack, apt-get download),
# reads them with the TypeScript compiler API and javac's tree API (see evals/README.md).
eval-sets-langs: install
	$(PY) -m evaluation.lang_sets

# Search load on one service, ghz-style: make load LEG=vector|sparse|graph|fusion [CONCURRENCY=8 DURATION=20]
# SETS="faq-perl faq-sed": only those eval sets' questions (the document corpora).
# NO_CACHE_WARM=1: a unique query per request (vector pays for every query embedding).
LEG ?= fusion
CONCURRENCY ?= 8
DURATION ?= 20
load: install
	$(PY) -m bench.load --leg $(LEG) --concurrency $(CONCURRENCY) --duration $(DURATION) \
		$(if $(filter 1,$(NO_CACHE_WARM)),--no-cache-warm,) $(if $(CORPUS),--corpus $(CORPUS),) \
		$(if $(SETS),--sets $(SETS),)

# NER precision/recall/F1 per type (PERSON, ORG, GPE) on the hand-labelled sample in evals/ner/;
# writes evals/results/ner-latest.json and .png. Needs no stores.
.PHONY: eval-ner
eval-ner: install
	$(PY) -m evaluation.ner

.PHONY: bench bench-techniques bench-ner bench-vector-recall

# How much of each eval corpus's true top 20 the HNSW scan finds, strict vs relaxed iterative
# order, ef_search 100 and 400 (bench/vector_recall.py; needs the corpora `make eval` indexes).
bench-vector-recall: serve
	$(PY) -m bench.vector_recall

# Query techniques (bench/bench_techniques.py): the gateway's added latency with HyDE and
# multi-query when the stand-in model answers at once and when it hangs (cut at the technique
# budget). Self-contained: its own stores on free ports, services in-process, click indexed.
bench-techniques: install
	$(PY) -m bench.bench_techniques

# Hedged leg calls (bench/bench_hedging.py): p50/p99 with the vector leg on two replicas, both
# healthy and one slowed by 200 ms, hedging off and on, and the extra leg calls hedging costs.
.PHONY: bench-hedging
bench-hedging: install
	$(PY) -m bench.bench_hedging

# Fusion gateway benchmark (bench/bench_fusion.py) against the services `make serve` starts:
# indexes the installed networkx + rich + click (~10.1k chunks; or PATH_TO_INDEX=...) if missing,
# then fused p50/p99/QPS and CPU per answer at CONCURRENCY=16, the medians of BENCH_RUNS runs back
# to back (3, as issue 31's targets count them), each leg direct, gateway overhead and the time to
# answer with a hanging leg; writes bench/results/.
BENCH_CONCURRENCY ?= 16
BENCH_RUNS ?= 3
bench: serve
	$(PY) -m bench.bench_fusion --concurrency $(BENCH_CONCURRENCY) --fused-runs $(BENCH_RUNS) $(if $(PATH_TO_INDEX),--path $(PATH_TO_INDEX),)

.PHONY: bench-quick
# The guard against the next slowdown (bench/bench_quick.py, a few minutes): fused answers over gRPC and
# HTTP at concurrency 1 and 8 on the installed click, half of them first-sight questions; p50, p99,
# answers/s and server CPU per answer; rewrites the README's performance table.
BENCH_QUICK_SECONDS ?= 12
bench-quick: serve
	$(PY) -m bench.bench_quick --seconds $(BENCH_QUICK_SECONDS)

.PHONY: bench-floor
# The floor under bench-quick (bench/grpc_floor.py): a fused answer's four gRPC hops between
# Python processes (client -> gateway -> three legs) with no work in them, answering with the
# running stack's captured messages; server CPU per answer at concurrency 1 and 8.
bench-floor: serve
	$(PY) -m bench.grpc_floor

.PHONY: profile
# Where each service spends its CPU under load (bench/profile_services.py): py-spy on every supervised
# service while fused answers run at concurrency 8; bench/results/flame-<service>.svg and a table of
# each service's share and hottest functions.
PROFILE_SECONDS ?= 20
profile: serve
	$(PY) -m bench.profile_services --seconds $(PROFILE_SECONDS)

# Named-entity extraction throughput (chunks/s, chars/s) next to the embedding rate on the same
# document chunks (bench/bench_ner.py); writes bench/results/bench_ner.{json,png}. Needs no stores.
bench-ner: install
	$(PY) -m bench.bench_ner

.PHONY: faults
# Faults under load (bench/faults.py): while FAULT_CONCURRENCY workers search through the gateway,
# each leg (SIGKILL), PostgreSQL and FalkorDB is stopped for FAULT_DOWN_S and restarted; a table of
# partial / failed answers, the longest answer against the deadline and the time to recover.
# Self-contained: its own stores, ports and services under /tmp/tribrid-bench-faults.
FAULT_CONCURRENCY ?= 4
FAULT_DOWN_S ?= 5
faults: install
	$(PY) -m bench.faults --concurrency $(FAULT_CONCURRENCY) --down-s $(FAULT_DOWN_S)

.PHONY: faults-index
# Kill while indexing (bench/faults_index.py): KILL_POINTS runs killed (SIGKILL) at random points of
# the indexer process and as many of PostgreSQL, each run again; a table of the consistency counts
# (duplicate / orphan chunks, postings, entities, edges; PostgreSQL and the graph agree) after each.
# Self-contained: its own stores under /tmp/tribrid-bench-faults-index.
KILL_POINTS ?= 20
faults-index: install
	$(PY) -m bench.faults_index --points $(KILL_POINTS)

.PHONY: overload
# Overload (bench/overload.py): finds the gateway's saturation concurrency (throughput stops
# rising), then drives 4x that, unbounded and with every service's max_in_flight at the saturation:
# the shed fraction (RESOURCE_EXHAUSTED), p99 of the accepted requests, each service's RSS before
# and after. Self-contained: its own stores, ports and services under /tmp/tribrid-bench-overload.
OVERLOAD_STEP_S ?= 6
OVERLOAD_RUN_S ?= 20
overload: install
	$(PY) -m bench.overload --step-s $(OVERLOAD_STEP_S) --run-s $(OVERLOAD_RUN_S)

.PHONY: bench-import
# Import a 10k-node, 30k-edge graph into ~10k document chunks (docstrings of installed libraries)
# and link its names in every chunk; timed from the request to the commit (target <= 60 s).
# Self-contained: a stack under /tmp/tribrid-bench-import, its first index kept for the next run.
bench-import: install
	$(PY) -m bench.bench_import

.PHONY: bench-scale
# The scale curve (bench/bench_scale.py): fused search at concurrency 1 and 8 and each leg directly,
# p50/p99 and answers/s, at SCALE_SIZES chunks of installed Python code (nested corpora); the
# steepest leg, each service's peak RSS and the indexer's while indexing. Every figure is measured
# with the bench-only pseudo-random embedder (TRIBRID_BENCH=1 in the bench's own processes only).
# Self-contained: a stack per size under /tmp/tribrid-bench-scale, indexes kept for the next run.
SCALE_SIZES ?= 10k 30k 100k
SCALE_SECONDS ?= 20
bench-scale: install
	$(PY) -m bench.bench_scale --sizes $(SCALE_SIZES) --seconds $(SCALE_SECONDS)
