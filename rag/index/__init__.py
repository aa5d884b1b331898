"""Layer 4, index: the FAISS index kinds (one table, `kinds.INDEX_TABLE`), the disk store (manifests, versions, reader
locks, atomic writes), incremental update, the streaming build and Ray shards."""
