"""Benchmarks (beside the agent, above retrieval): search backends side by side, the scale sweep and its report,
the product-quantisation sweep, and the HTTP load generator for `rag bench serve`."""
