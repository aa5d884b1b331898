"""A budget per document: what one file may cost a build, whatever its bytes say.

A small file can ask a parser for unbounded work: YAML aliases that nest (a 500-byte front matter naming 9**9 lists),
reST substitutions that double at each level, a PDF whose pages share one huge compressed content stream. Each
reader charges what it extracts to a `Budget` made from the file's size: extracted characters and passages at most
proportional to the bytes on disk (with a floor for small files and a hard cap for any file), and a deadline (also
proportional, floor and cap) that the readers check between the units they process (HTML chunks, PDF pages, reST
text blocks). A file past its budget raises
`Unreadable` with one line naming the bound; the folder's other files build.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

CHARS_PER_BYTE = 16  # text formats extract at most their size; compressed PDF text can be several times its bytes
MIN_CHARS = 512 * 1024  # the floor for a small file
MAX_CHARS = 40 * 2**20  # the hard cap for any file
BYTES_PER_PASSAGE = 64  # passages at most one per this many bytes on disk (with the floor below)
MIN_PASSAGES = 2_000
MAX_PASSAGES = 100_000
SECONDS = 60.0  # wall time one file may take (the cap), checked between units of work
SECONDS_MIN = 5.0  # ... and the floor, plus one second per BYTES_PER_SECOND of the file
BYTES_PER_SECOND = 50_000  # docutils reads about 300 KB/s on one core; the readers here are faster
YAML_MAX_ALIASES = 64  # real front matter uses a few aliases at most
YAML_MAX_BYTES = 256 * 1024
PDF_PAGE_CHARS = 200_000  # a dense printed page holds about 5,000 characters
PDF_STREAM_BYTES = 16 * 2**20  # decoded bytes of one content stream (pypdf's own default allows 75 MB)


class Unreadable(Exception):
    """A file that cannot be read as its extension says, or past its budget; the message is the reason, one line."""


@dataclass
class Budget:
    """What one file may still extract (characters, passages) and until when (a time.monotonic deadline)."""

    chars: int
    passages: int
    deadline: float
    size: int = 0
    seconds: float = SECONDS
    used: int = field(default=0)

    @classmethod
    def for_size(cls, size: int, seconds: float | None = None) -> "Budget":
        if seconds is None:
            seconds = min(SECONDS, SECONDS_MIN + size / BYTES_PER_SECOND)
        return cls(
            chars=min(MAX_CHARS, max(MIN_CHARS, CHARS_PER_BYTE * size)),
            passages=min(MAX_PASSAGES, max(MIN_PASSAGES, size // BYTES_PER_PASSAGE)),
            deadline=time.monotonic() + seconds,
            size=size,
            seconds=seconds,
        )

    def charge(self, chars: int) -> None:
        """Count extracted characters; Unreadable past the bound or past the deadline."""
        self.used += chars
        if self.used > self.chars:
            raise Unreadable(
                f"over its budget: more than {self.chars:,} characters extracted from a {self.size:,}-byte file"
            )
        self.check_time()

    def check_time(self) -> None:
        if time.monotonic() > self.deadline:
            raise Unreadable(f"over its budget: reading took more than {self.seconds:.0f} s")

    def check_passages(self, count: int) -> None:
        if count > self.passages:
            raise Unreadable(
                f"over its budget: {count:,} passages from a {self.size:,}-byte file (at most {self.passages:,})"
            )


def unbounded() -> Budget:
    """A budget with the hard caps only (for text handed to a parser directly, with no file behind it)."""
    return Budget.for_size(MAX_CHARS)


def load_front_matter(text: str):
    """YAML front matter through PyYAML's safe loader, refusing more than YAML_MAX_ALIASES aliases (each alias can
    stand for a whole tree, so a few hundred bytes can name billions of nodes). Unreadable past the bounds; None for
    front matter that is not valid YAML (it is then only left out)."""
    import yaml

    if len(text) > YAML_MAX_BYTES:
        raise Unreadable(f"over its budget: front matter of {len(text):,} characters (at most {YAML_MAX_BYTES:,})")

    class CountingLoader(yaml.SafeLoader):
        aliases = 0

        def compose_node(self, parent, index):
            if self.check_event(yaml.AliasEvent):
                self.aliases += 1
                if self.aliases > YAML_MAX_ALIASES:
                    raise Unreadable(f"over its budget: front matter with more than {YAML_MAX_ALIASES} YAML aliases")
            return super().compose_node(parent, index)

    loader = CountingLoader(text)
    try:
        return loader.get_single_data()
    except yaml.YAMLError:
        return None
    except RecursionError:
        raise Unreadable("over its budget: front matter nested too deep") from None
    finally:
        loader.dispose()
