"""The agent: plan, retrieve, grade, rewrite or hop, and answer with citations (nodes.py; graph.py wires them).
`settings.AgentSettings` says how to answer. `run_agent` is imported on first use, so that reading the settings
does not load LangGraph."""

__all__ = ["run_agent"]


def __getattr__(name: str):
    if name == "run_agent":
        from rag.agent.graph import run_agent

        return run_agent
    raise AttributeError(f"module 'rag.agent' has no attribute {name!r}")
