"""Numbers written in words, read as digits: "two thousand and forty-eight" -> "2048", "rank four" -> "rank 4".

The calculator (rag.calculator.formulas) reads a question's numbers as digits; a user may spell them. A run of number
words (units, teens, tens, "hundred", "thousand", "million", "billion", "and" between them, a hyphen inside
"forty-eight") becomes its value. A lone "one" is left alone (it is a pronoun in "which one") unless it follows
"rank" or "position", as is a number word joined by a hyphen to a word that is not a number ("one-hot",
"two-tower") and "a" ("a million" is read by the calculator itself).

Why not text2num's alpha2digit, the library for this: it also rewrites what the calculator already reads from
digits and scales ("600 billion tokens" -> "600 1000000000 tokens", "4 million vectors" -> "4 1000000 vectors") and
turns "fourth root" into "4th root"; with text2num 3.1.0 it breaks four of the formula tests.
"""

from __future__ import annotations

import re

UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
    "seventeen": 17, "eighteen": 18, "nineteen": 19,
}  # fmt: skip
TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
SCALES = {"hundred": 100, "thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
_WORD = "|".join(sorted([*UNITS, *TENS, *SCALES], key=len, reverse=True))
_RUN = re.compile(
    rf"\b(?:{_WORD})(?:(?:\s+and\s+|\s+|-)(?:{_WORD}))*\b(?!-[a-z])",
    re.IGNORECASE,
)


_RANKED = re.compile(r"\b(?:rank(?:ed)?|position|place|top)\s+$", re.IGNORECASE)  # "rank one" is 1


def value(run: str) -> int | None:
    """The value of a run of number words, or None when it does not read as one number ("two three")."""
    total, current, last = 0, 0, None
    for word in re.split(r"\s+and\s+|\s+|-", run.lower()):
        if word in UNITS or word in TENS:
            n = UNITS.get(word, TENS.get(word))
            if last in ("unit", "teen") or (last == "tens" and (word in TENS or n >= 10)):
                return None  # "two three", "twenty thirty", "twenty twelve": not one number
            current += n
            last = "tens" if word in TENS else ("teen" if n >= 10 else "unit")
        elif word == "hundred":
            if current == 0 or current >= 100:
                return None
            current *= 100
            last = "scale"
        else:  # thousand, million, billion
            scale = SCALES[word]
            if current == 0:
                return None
            total += current * scale
            current, last = 0, "scale"
    return total + current


def digits(text: str) -> str:
    """text with each run of number words replaced by its digits; a lone "one" and runs that do not read as one
    number stay as written."""

    def swap(m: re.Match) -> str:
        run = m.group(0)
        if run.lower() == "one" and not _RANKED.search(text[: m.start()]):
            return run
        n = value(run)
        return run if n is None else str(n)

    return _RUN.sub(swap, text)
