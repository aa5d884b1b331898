"""`AgentSettings`: how the agent answers (which LLM backend, how many retrieval rounds, ...), validated once.

The CLI (`rag ask`, `rag eval agent`), the HTTP `/ask` and OpenAI endpoints, the Python API and the evaluations
build one; its defaults are the only place the agent's defaults live.
"""

from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass

from rag.answer.llm import LLM_BACKENDS, check_backend_settings, check_llm
from rag.answer.reading import SWITCHABLE
from rag.config import RagError

MAX_STEPS_LIMIT = 20  # the most retrieval rounds one question may take (HTTP bounds it the same)
# The answer components an ablation may turn off: the answerers (rag.answer.reading.ANSWERERS) and the learned
# sentence ranker that a long answer adds a sentence from (rag.answer.sentence_rank).
COMPONENTS = (*SWITCHABLE, "sentence-ranker")


@dataclass(frozen=True)
class AgentSettings:
    """How to answer: `validated()` checks every field, or raises a RagError naming it and what it accepts."""

    llm: str = LLM_BACKENDS[0]  # extractive: no model, answers with the passages' own sentences
    max_steps: int = 4  # retrieval rounds (a rewrite or a hop is one more round)
    short_answer: bool = False  # the answer span alone (evaluations), not the sentence around it
    use_lookup: bool = True  # look up titles the question names (the entity linker) beside the searches
    use_reader: bool = True  # the learned span reader (rag.answer.reader) picks extractive answers when it ships
    use_abstain: bool = True  # say "the documents do not say" when the learned decision (rag.answer.abstain) finds
    # that the passages do not answer the question
    without: tuple[str, ...] = ()  # COMPONENTS turned off, for an ablation
    hop_threshold: float | None = None  # multi-hop probability at which a planned second hop runs (None: the one
    # `rag train hop` chose, rag/models/multihop_weights.json; 0 runs every planned hop, 1 none)

    def validated(self) -> "AgentSettings":
        check_backend_settings(check_llm(self.llm))
        steps = self.max_steps
        if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= MAX_STEPS_LIMIT:
            raise RagError(
                f"--max-steps must be at least 1 and at most {MAX_STEPS_LIMIT} (max_steps={steps!r}); "
                f"try --max-steps {AgentSettings.max_steps}"
            )
        for name in self.without:
            if name not in COMPONENTS:
                close = difflib.get_close_matches(str(name), COMPONENTS, n=1, cutoff=0.5)
                hint = f"did you mean {close[0]}? " if close else ""
                raise RagError(f"unknown answer component {name!r}: {hint}choose from {', '.join(COMPONENTS)}")
        t = self.hop_threshold
        if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float)) or not 0.0 <= t <= 1.0):
            raise RagError(f"--hop-threshold must be a probability from 0 to 1 (hop_threshold={t!r}); leave it unset")
        return self

    def as_dict(self) -> dict:
        return asdict(self)


DEFAULT_AGENT = AgentSettings()
