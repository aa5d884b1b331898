"""rag: agentic retrieval at any embedding dimension d.

Stages (one module each): corpus → encoders → index → retrieve → agent; evaluate and lm study d.
"""

__version__ = "0.1.0"
