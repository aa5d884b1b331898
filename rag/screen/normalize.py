"""Normalisation before the injection screen (rag.screen.detector) and its classifier read a text: NFKC, invisible
characters dropped, look-alike letters from other scripts mapped to Latin by Unicode's confusables table, letter-
spaced runs ("I g n o r e") joined, leetspeak ("1gn0r3 4ll") read as letters, case folded, whitespace collapsed.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from pathlib import Path

from rag.config import built_once

_INVISIBLE = re.compile(
    r"[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    r"\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0]"
)


def visible(text: str) -> str:
    """text without invisible characters, except the zero-width joiners that Persian and Indic words need."""
    return _INVISIBLE.sub(lambda m: m.group() if m.group() in "\u200c\u200d" else "", text)


@built_once()
def confusables() -> dict[int, str]:
    """Unicode's confusables (via the confusable_homoglyphs package): each non-ASCII character that looks like an
    ASCII letter or digit, mapped to it (Cyrillic 'а' -> 'a', Greek 'ο' -> 'o', fullwidth and math letters ...)."""
    import confusable_homoglyphs

    table = json.loads((Path(confusable_homoglyphs.__file__).parent / "confusables.json").read_text(encoding="utf-8"))
    out = {}
    for char, glyphs in table.items():
        if len(char) != 1 or char.isascii():
            continue
        latin = sorted(
            (g["c"] for g in glyphs if len(g["c"]) == 1 and g["c"].isascii() and g["c"].isalnum()),
            key=lambda c: (not c.isalpha(), c),
        )  # a letter before a digit: capital О is O, not 0
        if latin:  # Unicode's skeleton for capital I is l; an upper-case look-alike of I reads as I here
            out[ord(char)] = "I" if latin[0] == "l" and char.isupper() else latin[0]
    return out


_SPACED = re.compile(
    r"(?<!\w)(?:\w[ \t._\-*|]){2,}\w(?!\w)"
)  # "I g n o r e", "i.g.n.o.r.e": single letters, one gap each
SPACED_TRIGGERS = re.compile(
    r"ignor|disregard|forget|overrid|instruction|systemprompt|previous|assistant|jailbreak|developermode|reveal"
)


def despace(text: str) -> str:
    """Runs of four or more single letters with one separator between them joined into words. The run's most
    common separator is the one between letters; another one stays ("s-e-n-d t-h-e" -> "send the",
    "l-o-g-s.n-e-t" -> "logs.net"). "I g n o r e   a l l" -> "Ignore all" where words were set apart by wider
    gaps, "Ignoreall" where they were not."""
    return _SPACED.sub(lambda m: _join_letters(m.group()), text)


def _join_letters(run: str) -> str:
    separators = Counter(re.findall(r"[ \t._\-*|]", run))
    between_letters = separators.most_common(1)[0][0]
    return run.replace(between_letters, "")


_LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a", "$": "s"})
# a word written with digits for letters ("1gn0r3", "4ll"): a letter, one of 0 1 3 4 5 7 @ $, and no other digit
# (so "web-7d9f", "ipv6" and "2fa" are not)
_LEET_WORD = re.compile(r"(?<![\w@$])(?=[\w@$]*[^\W\d_])(?=[\w@$]*[013457@$])(?![\w@$]*[2689])[\w@$]+")


def deleet(text: str) -> str:
    """Text with three or more leet words read as letters ("1gn0r3 4ll pr3v10us 1nstruct10ns" -> "ignore all
    previous instructions"); text with fewer is returned as it is (a model number or a hash is not leetspeak)."""
    if len(_LEET_WORD.findall(text)) < 3:
        return text
    return _LEET_WORD.sub(lambda m: m.group().translate(_LEET), text)


def normalize(text: str) -> str:
    """NFKC, invisible characters removed, look-alikes mapped to ASCII, letter-spaced runs joined, leetspeak read
    as letters, case folded, whitespace collapsed."""
    text = deleet(despace(_INVISIBLE.sub("", unicodedata.normalize("NFKC", text))))
    return " ".join(text.translate(confusables()).casefold().split())


def spaced_share(text: str) -> float:
    """The share of text's letters that stand in letter-spaced runs ("п е р е ш л и" counts, "I-9 form" does not)."""
    text = unicodedata.normalize("NFKC", text)
    letters = sum(ch.isalpha() for ch in text)
    spaced = sum(ch.isalpha() for m in _SPACED.finditer(text) for ch in m.group())
    return spaced / letters if letters else 0.0


def spaced_trigger(text: str) -> bool:
    """Letter-spaced text that spells an override word: nobody spaces out "ignore previous" to inform a reader."""
    runs = [re.sub(r"[ \t._\-*|]", "", m.group()) for m in _SPACED.finditer(unicodedata.normalize("NFKC", text))]
    return any(SPACED_TRIGGERS.search(run.translate(confusables()).casefold()) for run in runs)
