"""Studies (beside the agent, above retrieval): the retrieval-vs-d evaluation grid, its rows and metrics, the report
and its plots, the quality/bytes frontier, `advise`, and the agent's answer evaluation."""
