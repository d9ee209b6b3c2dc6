# One entry point for humans and CI. `make check` is exactly what CI runs (.ci/run calls it).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STACK ?= dev
OUT ?= build/render
export INFERENCE_PLATFORM_SCHEMAS ?= ../shared/schemas

.PHONY: check install lint typecheck validate test render plan bench clean

check: lint typecheck validate test

$(BIN)/.installed: requirements.lock
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --require-hashes -r requirements.lock
	touch $@

install: $(BIN)/.installed

lint: install
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .

typecheck: install
	$(BIN)/mypy

validate: install
	$(BIN)/python -m stacks validate

test: install
	$(BIN)/python -m pytest -q -n 2

render: install
	$(BIN)/python -m stacks render $(STACK) --out $(OUT)

plan: install
	$(BIN)/python -m stacks plan $(STACK)

bench: install
	$(BIN)/python -m stacks bench --sizes 100,200 --repeat 2

clean:
	rm -rf $(VENV) build .pytest_cache .mypy_cache .ruff_cache
