"""`IndexSpec`: what an index is (encoder, d, kind, reducer, the documents' encoder backend), validated once.

Every build path (the store, the streaming build, Ray shards, update), `advise` and `bench scale` take an IndexSpec;
`RetrievalSettings` (rag.retrieve) composes one. Its defaults are the project's defaults for an index.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

from rag.config import RagError, valid_choice
from rag.encoders import check_backend, check_encoder_name, encoder_width
from rag.encoders.cache import slug
from rag.index.kinds import index_kind
from rag.reduce import REDUCERS


@dataclass(frozen=True)
class IndexSpec:
    """One index: `validated()` fills d (the encoder's full width) and the documents' backend, or raises a
    RagError naming the bad field and what it accepts."""

    encoder: str = "minilm"
    dim: int | None = None  # None = the encoder's full width
    kind: str = "flat"
    reduce: str = "pca"
    backend: str | None = None  # how the documents are encoded; None = the encoder's default (fp32)

    @classmethod
    def from_manifest(cls, manifest: dict) -> "IndexSpec":
        """The spec an index was built with, read back from its manifest."""
        return cls(
            manifest["encoder"],
            manifest["dim"],
            manifest["kind"],
            manifest.get("reduce", "pca"),
            manifest.get("backend"),
        )

    def checked_names(self) -> "IndexSpec":
        """The names and the type of d checked, without loading the encoder to learn its width."""
        check_encoder_name(self.encoder)
        index_kind(self.kind)
        valid_choice(self.reduce, REDUCERS, "reducer")
        if self.dim is not None and (isinstance(self.dim, bool) or not isinstance(self.dim, int)):
            raise RagError(f"--dim must be a whole number, got {self.dim!r}")
        return self

    def validated(self) -> "IndexSpec":
        """Every field checked; d and the documents' backend filled in."""
        self.checked_names()
        width = encoder_width(self.encoder)
        dim = width if self.dim is None else self.dim
        if not 1 <= dim <= width:
            raise RagError(f"--dim {dim} is out of range for encoder {self.encoder}; choose 1..{width}")
        return replace(self, dim=dim, backend=check_backend(self.encoder, self.backend))

    @property
    def name(self) -> str:
        """The index's folder name under indexes/<corpus>/ (d must be filled in: validated())."""
        return f"{slug(self.encoder)}-d{self.dim}-{self.kind}" + ("" if self.reduce == "pca" else f"-{self.reduce}")

    def rebuild_command(self, corpus_name: str) -> str:
        return (
            f"rag index build --corpus {corpus_name} --encoder {self.encoder} --dim {self.dim} "
            f"--index {self.kind} --reduce {self.reduce}"
        )

    def expect(self, corpus_hash: str) -> dict:
        """The manifest fields that an index of this spec over this corpus content must carry."""
        return {
            "corpus_hash": corpus_hash,
            "encoder": self.encoder,
            "dim": self.dim,
            "kind": self.kind,
            "reduce": self.reduce,
        }

    def as_dict(self) -> dict:
        return asdict(self)


INDEX_SPEC_FIELDS = tuple(f.name for f in fields(IndexSpec))
DEFAULT_INDEX = IndexSpec()
