"""HTTP service (`rag serve`): app.py (endpoints), openai_api.py (OpenAI-compatible endpoints), models.py (the
schema), policy.py (what the operator allows), pool.py (the bounded retriever pool), guard.py (body limits, the
API key, access logs, the header timeout), metrics.py (Prometheus), service.py (the work both APIs share) and
run.py (the start-up: the checked policy, the warnings, the listening socket, uvicorn)."""

from rag.serve.app import create_app
from rag.serve.policy import ServePolicy

__all__ = ["create_app", "ServePolicy"]
