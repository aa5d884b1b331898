"""The agent: plan, retrieve, grade, rewrite or hop, and answer with citations (nodes.py; graph.py wires them)."""

from rag.agent.graph import run_agent

__all__ = ["run_agent"]
