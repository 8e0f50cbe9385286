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
# checkov pins boto3 below the project's pins: it gets its own venv from the same lock (uv.lock's "lint" group).
LINT_VENV := .venv-lint
LINT_STAMP := $(LINT_VENV)/.synced
LINT_TEMPLATE := BatchGatewayStack.template.json
# checkov offline: no Prisma Cloud downloads, no PyPI update check.
CHECKOV := BC_SKIP_MAPPING=TRUE CKV_SKIP_PACKAGE_UPDATE_CHECK=true $(LINT_VENV)/bin/checkov --framework cloudformation \
	--skip-download --quiet --compact

.PHONY: help install demo local test test-all test-unit test-integration test-infra test-e2e test-gllm chaos synth lint bench clean \
	console-screenshots

help:
	@echo "make demo | local | test (test-unit | test-integration | test-infra) | test-e2e | test-all | test-gllm | chaos | synth | lint | bench | console-screenshots | clean"

$(VENV_STAMP): pyproject.toml uv.lock
	@$(UV) --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet uv
	$(UV) sync --frozen --quiet
	@touch $@

$(LINT_STAMP): pyproject.toml uv.lock $(VENV_STAMP)
	UV_PROJECT_ENVIRONMENT=$(LINT_VENV) $(UV) sync --frozen --only-group lint --no-install-project --quiet
	@touch $@

# Debian's Chromium for the console's browser tests and screenshots (decision 0137), driven by Playwright for Python
# with executable_path: no browser download at run time (`playwright install` is never run). CI runs as root on a
# clean machine; elsewhere sudo asks.
CHROMIUM := /usr/bin/chromium
$(CHROMIUM):
	$$([ "$$(id -u)" = 0 ] || echo sudo) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $$([ "$$(id -u)" = 0 ] || echo sudo -E) apt-get install -y -qq --no-install-recommends chromium
	@test -x $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

install: $(VENV_STAMP) $(LINT_STAMP)

demo: $(VENV_STAMP)
	$(UV) run --frozen python -m batch_gateway_dev.local.demo

local: $(VENV_STAMP)
	$(UV) run --frozen batch-gateway local

# The suite a change is checked with, in about 5 minutes on 2 cores: unit, integration and infra. The local stack end
# to end (about 6 minutes) is its own layer, test-e2e (decision 0091); CI (.ci/run) runs both at once (decision 0109).
# Three workers on two cores: a worker alone kept a core busy only ~75 % of the time (its tests wait on simulated
# providers, held calls and real clocks), and a third fills those waits, most of all once the e2e layer has ended.
test: $(VENV_STAMP) $(LINT_STAMP)
	$(UV) run --frozen pytest -n 3 -q --durations=15 tests/unit tests/integration tests/infra

test-all: test test-e2e

# One layer at a time, cheapest first: unit (no network, no AWS), integration (handlers against moto in-process and
# the simulators), infra (the synthesized template, cdk-nag, cfn-lint, checkov), e2e (the local stack end to end).
test-unit: $(VENV_STAMP)
	$(UV) run --frozen pytest -n 2 -q tests/unit

test-integration: $(VENV_STAMP)
	$(UV) run --frozen pytest -n 2 -q tests/integration

test-infra: $(VENV_STAMP) $(LINT_STAMP)
	$(UV) run --frozen pytest -n 2 -q tests/infra

# Three workers on two cores: the layer mostly waits on the local stack's clocks (leases, timeouts, provider
# processing), and a third stack overlaps those waits (decision 0109's addendum).
test-e2e: $(VENV_STAMP) $(CHROMIUM)
	$(UV) run --frozen pytest -n 3 -q --durations=15 tests/e2e

# The seed example program with gllm-inference's own invokers (OpenAILMInvoker with base_url, AnthropicLMInvoker with
# ANTHROPIC_BASE_URL) through both doors. gllm-inference brings ~500 MB of dependencies (langchain, pandas, ...), so
# it gets its own venv from the registry (~2 minutes the first time) and is not in uv.lock; `make test` skips this
# test unless GLLM_PYTHON names an interpreter that has it.
GLLM_VENV := .venv-gllm
GLLM_PACKAGE := gllm-inference-binary[openai,anthropic]==0.6.188.post2
test-gllm: $(VENV_STAMP)
	@test -x $(GLLM_VENV)/bin/python || { $(UV) venv --quiet --python 3.11 $(GLLM_VENV) && \
		$(UV) pip install --quiet --python $(GLLM_VENV)/bin/python '$(GLLM_PACKAGE)'; }
	GLLM_PYTHON=$(CURDIR)/$(GLLM_VENV)/bin/python $(UV) run --frozen pytest -q -p no:randomly tests/e2e/test_gllm_seed.py

# Randomised fault schedules (decision 0122): each SEED (one or a list) draws JOBS jobs from three owners on the four
# providers, with faults at the wire, a list lag, Lambda workers killed mid-step, cancels and sweeps, and runs them on
# a local stack of its own; then checks the invariants. A failure prints CHAOS FAILED seed=<n> and the command that
# replays it. CLAIM_CUTS=0 never kills Submit or Poll (the e2e suite's runs: their claims wait out a lease).
SEED ?= 1 2 3
JOBS ?= 12
CLAIM_CUTS ?= 1
chaos: $(VENV_STAMP)
	$(UV) run --frozen python -m batch_gateway_dev.chaos --seed $(SEED) --jobs $(JOBS) $(if $(filter 0,$(CLAIM_CUTS)),--no-claim-cuts)

# Real bundling (pip for the Lambda platform, no Docker): writes cdk.out/BatchGatewayStack.template.json.
synth: $(VENV_STAMP) node_modules/.installed
	npx cdk synth --quiet --output cdk.out
	@test -s cdk.out/BatchGatewayStack.template.json

# ruff; then cfn-lint (W3005: CDK's own redundant DependsOn) and checkov (0 failed checks; each check that does not
# fit is skipped in the template metadata with its reason, see stacks/checkov.py) on templates synthesized with
# bundling skipped, with the default context and with -c kms=customer -c providers=anthropic,openai,bedrock,google
# -c console_origin=https://console.example.com (the key mount's CORS preflights, decision 0134).
# cdk-nag runs inside every synth.
lint: $(VENV_STAMP) $(LINT_STAMP)
	$(UV) run --frozen ruff check .
	$(UV) run --frozen ruff format --check .
	$(UV) run --frozen mypy
	$(UV) run --frozen lint-imports
	$(UV) run --frozen python -m stacks.synth_for_lint cdk.out/lint
	$(UV) run --frozen python -m stacks.synth_for_lint cdk.out/lint-kms kms=customer providers=anthropic,openai,bedrock,google \
		console_origin=https://console.example.com
	$(UV) run --frozen cfn-lint -i W3005 -- cdk.out/lint/$(LINT_TEMPLATE) cdk.out/lint-kms/$(LINT_TEMPLATE)
	$(CHECKOV) -f cdk.out/lint/$(LINT_TEMPLATE)
	$(CHECKOV) -f cdk.out/lint-kms/$(LINT_TEMPLATE)

# A local stack, the console in Debian's Chromium, a job or two, and a PNG of each page in docs/screenshots/ (README's
# "Console" section shows them).
console-screenshots: $(VENV_STAMP) $(CHROMIUM)
	$(UV) run --frozen python -m tests.support.console_screenshots docs/screenshots

bench: $(VENV_STAMP)
	$(UV) run --frozen python -m bench

clean:
	rm -rf cdk.out cdk.out.lint .pytest_cache
