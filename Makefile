# One task runner. Every target installs what it needs and works offline on a fresh clone
# (package registries only).
SHELL := /bin/bash
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export CDK_DISABLE_CLI_TELEMETRY := true
export UV_NO_PROGRESS := 1
# Byte-compile the venv once at install: this machine sets PYTHONDONTWRITEBYTECODE, so otherwise every test process
# and every CLI call would compile the SDKs from source again.
export UV_COMPILE_BYTECODE := 1
PYTHON ?= python3
UV := $(PYTHON) -m uv
VENV_STAMP := .venv/.synced

.PHONY: help install demo local test test-fast synth lint bench clean

help:
	@echo "make demo | local | test | synth | lint | bench | clean"

$(VENV_STAMP): pyproject.toml uv.lock
	@$(UV) --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet uv
	$(UV) sync --frozen --quiet
	@touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

install: $(VENV_STAMP)

demo: $(VENV_STAMP)
	$(UV) run --frozen python -m batch_gateway.local.demo

local: $(VENV_STAMP)
	$(UV) run --frozen batch-gateway local

test: $(VENV_STAMP)
	$(UV) run --frozen pytest -n 2 -q

# Real bundling (pip for the Lambda platform, no Docker): writes cdk.out/BatchGatewayStack.template.json.
synth: $(VENV_STAMP) node_modules/.installed
	npx cdk synth --quiet --output cdk.out
	@test -s cdk.out/BatchGatewayStack.template.json

# cfn-lint on a template synthesized with bundling skipped (W3005: CDK's own redundant DependsOn).
lint: $(VENV_STAMP)
	$(UV) run --frozen ruff check .
	$(UV) run --frozen python -m stacks.synth_for_lint cdk.out/lint
	$(UV) run --frozen cfn-lint -i W3005 -- cdk.out/lint/BatchGatewayStack.template.json

bench: $(VENV_STAMP)
	$(UV) run --frozen python -m bench

clean:
	rm -rf cdk.out cdk.out.lint .pytest_cache
