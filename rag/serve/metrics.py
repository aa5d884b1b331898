"""Prometheus metrics of one app (its own registry, so several apps in one process do not collide): GET /metrics."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)


class Metrics:
    def __init__(self, pool, slots=None):
        self.registry = r = CollectorRegistry()
        self.requests = Counter(
            "rag_requests", "HTTP requests by endpoint and status", ["method", "path", "status"], registry=r
        )
        self.latency = Histogram(
            "rag_request_seconds", "HTTP request latency by endpoint", ["method", "path"], buckets=BUCKETS, registry=r
        )
        self.streams_cancelled = Counter(
            "rag_streams_cancelled", "streamed agent runs stopped because the client went away", registry=r
        )
        if slots is not None:
            Gauge("rag_requests_computing", "/search and /ask runs computing now", registry=r).set_function(
                lambda: slots.counts()[0]
            )
            Gauge("rag_requests_waiting", "/search and /ask requests waiting for a slot", registry=r).set_function(
                lambda: slots.counts()[1]
            )
            Gauge(
                "rag_requests_refused_total", "requests refused with 503: every slot and queue place taken", registry=r
            ).set_function(lambda: slots.refused)
        self.asks_cancelled = Counter(
            "rag_asks_cancelled", "whole (not streamed) agent runs stopped because the client went away", registry=r
        )
        self.injections = Counter("rag_injection_flags", "passages flagged as carrying instructions", registry=r)
        Gauge("rag_pool_open_retrievers", "retrievers open in the pool", registry=r).set_function(
            lambda: len(pool.entries)
        )
        Gauge("rag_pool_estimated_bytes", "estimated memory of the open retrievers", registry=r).set_function(
            pool.memory
        )
        for name, attr, doc in (
            ("rag_pool_opens", "opens", "retrievers opened"),
            ("rag_pool_evictions", "evictions", "retrievers dropped by the LRU bound"),
            ("rag_index_builds", "builds_done", "indexes built on request"),
            ("rag_index_builds_refused", "builds_refused", "builds refused: too many at once"),
        ):
            Gauge(name + "_total", doc, registry=r).set_function(lambda a=attr: getattr(pool, a))

    def watch(self, watcher) -> None:
        """The folder watcher's health (rag.serve.watch.Watcher.health), once `rag serve --watch` starts it."""
        r = self.registry
        Gauge(
            "rag_watch_ok", "1 while the watcher runs and no served folder's latest update failed", registry=r
        ).set_function(lambda: float(watcher.health()["ok"]))
        for name, key, doc in (
            ("rag_watch_updates_total", "updates", "folder updates applied by the watcher"),
            ("rag_watch_errors_total", "errors", "errors the watcher caught and went on from"),
            ("rag_watch_restarts_total", "restarts", "watches restarted after a failure"),
        ):
            Gauge(name, doc, registry=r).set_function(lambda k=key: watcher.health()[k])

    def observe(self, method: str, path: str, status: int, seconds: float) -> None:
        self.requests.labels(method, path, str(status)).inc()
        self.latency.labels(method, path).observe(seconds)

    def text(self) -> bytes:
        return generate_latest(self.registry)
