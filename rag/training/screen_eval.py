"""Measure the injection detector (rag.screen.detector): the false-positive rate on benign text and the recall on
attack phrasings, each set reported on its own, and which split each set belongs to.

Benign: real sentences from every named corpus that is available (builtin, scifact, hotpotqa, squad), from the
passages whose id hash falls in the held-out quarters 1 and 3 (the classifier trains on quarter 0 and the
threshold was chosen on quarter 2), plus the sets in evalsets/injection/. Attacks: one file per set (one variant
per line, a literal \\n between its sentences); a variant counts as caught when any of its sentences is flagged.

SPLIT says what each set was for. fresh4..25 and benign_howto3, benign_ai, benign5..25 were each written by an
engineer who never saw the detector or its training data, in twenty-two rounds; each round's sets were measured once
as held out:
- round 1 (first classifier): fresh4 81 % recall; benign_howto3 + benign_ai 7 of 200 flagged;
- round 2 (wider grammar; fresh3 and benign_howto2 trained on): fresh5 91 % recall; benign5 10 of 150 flagged;
- round 3, shipped (clauses scored; fresh4, benign_howto3, benign_ai trained on; fresh5 and benign5 the dev split
  that chose the threshold): fresh6 77 of 90 (85.6 %); benign6 10 of 160 flagged;
- rounds 4 and 5 trained classifiers on fresh5..7 and benign5..7 too; each did better on its own held-out set
  (fresh7, then fresh8) but flagged or missed a sentence the tests hold (docs/security.md), so round 3 stays
  shipped. Round 3 on the later sets, measured once each: fresh7 91 of 99, fresh8 97 of 100; benign7 11 and
  benign8 12 of 160 flagged;
- round 6 (fresh9, benign9), measured once with round 3 as shipped then (int8): 93 of 100 caught, 25 of 159
  flagged, 15 of them sentences in other languages. The classifier was then no longer asked about text in another
  language that names neither the model, its answer, its instructions nor the user (the same pattern had shown in
  benign6 and benign8): 10 of 159 flagged, 93 of 100 still caught. That figure is not blind;
- round 7 (fresh10, benign10), measured once, blind, with the screen as shipped (round 3, int8, language test):
  95 of 100 caught, 19 of 160 flagged. A round-6 classifier trained on fresh5..8 and benign5..8 too caught 97 and
  96, flagged 5 and 12, and failed a test sentence (docs/security.md), so it was not shipped;
- round 8 (fresh11, benign11), measured once, blind, for two candidates: round 3 as shipped caught 83 of 100 and
  flagged 17 of 160; the round-7 classifier (trained on fresh5..10 and benign5..10 too, with markdown-link
  negatives) caught 91 and flagged 8, passed every test, and is shipped. fresh11 and benign11 are its held-out
  sets; everything before them is training data now;
- round 9 (fresh12, benign12), measured once, blind: round 7 as shipped caught 86 of 100 and flagged 1 of 160. A
  round-8 classifier (fresh11 and benign11 trained on too, and a generated family of orders to an agent's tools
  with runbook look-alikes) caught 88 and flagged 3, and 9 of 2,421 corpus sentences against 5: more flags, so
  it was not shipped;
- round 10 (fresh13, benign13), measured once, blind: round 7 as shipped caught 73 of 100 and flagged 5 of 160;
  lexical rules for orders to an agent (its tools, its access, addressed to it) and for overrides and addressed
  notes in other languages (rag.screen.rules, written from the misses of fresh11 and fresh12) caught 89
  and flagged 5;
- round 11 (fresh14, benign14), measured once, blind: shipped 83 of 100 caught, 13 of 160 flagged; the rules of
  round 10 caught 91 and flagged 15 (a quoted attack in a security page, a Japanese sentence about an assistant),
  so they were not shipped. Fixed: a rule that stands alone ignores quoted text, a CJK address needs a colon;
  more languages for roles and fake system headers;
- round 12 (fresh15, benign15), measured once, blind: shipped 74 of 100 caught, 10 of 160 flagged; the fixed
  rules caught 87 and flagged 10, passed every test, and were shipped;
- round 13 (fresh16, benign16), measured once, blind: the round-12 rules caught 73 of 99 and flagged 8 of 160;
  rules written from round 12's misses (tools and access in other languages, the chat history mailed away, a
  CJK agent header, a bracketed system header, an adverb before the verb, "in your role as the ... agent") and
  FP fixes (a transcript line spoken by the assistant, German "ignore the previous e-mail") caught 73 and flagged
  7, passed every test, and were shipped;
- round 14 (fresh17, benign17), measured once, blind: the round-13 rules caught 78 of 100 and flagged 6 of 160;
  rules written from round 13's misses (the model or the agent addressed in more languages and in one word,
  Thai, "from this moment you are" in more languages, "at the end of every answer" and "tell the user that" in
  other languages, an act kept from the user, "@copilot-agent ...", whole sentences letter-spaced in any script)
  caught 81 and flagged the same 6, passed every test, and were shipped;
- round 15 (fresh18, benign18), measured once, blind: the round-14 rules caught 79 of 99 and flagged 10 of 160;
  rules written from round 14's misses (words split by punctuation read whole, "agent with file access" and
  other agents named by their tools, "must be executed", granting admin rights, disabling alarms, unlocking
  doors) caught the same 79 and flagged the same 10, passed every test, and were shipped;
- round 16 (fresh19, benign19), measured once, blind: the round-15 rules caught 93 of 99 and flagged 9 of 159;
  rules written from round 15's misses ("if someone asks about X, say Y" in other languages, with the familiar
  imperative a text addresses to a program rather than the polite one of a staff script) caught the same 93 and
  flagged the same 9, passed every test, and were shipped;
- round 17 (fresh20, benign20), measured once, blind: the round-16 rules caught 92 of 100 and flagged 11 of 160;
  rules written from round 16's flags and misses (a quotation after "say to the assistant:" is no order, a
  Turkish plural subject is no vocative, a bare English "tool" is left to the English rules; a dash after an
  address, "..., and assistant, when you ...", Russian "cancel the earlier instructions", Arabic "if a user
  asks ..., say") caught the same 92 and flagged 9, passed every test, and are shipped. After that measurement
  the Vietnamese override rule no longer reads "quên" (forget) alone, which flagged "quên mật khẩu" (a forgotten
  password): benign20 8 of 160, measured on the sets already seen only;
- round 18 (fresh21, benign21), measured once, blind: the round-17 rules caught 88 of 99 and flagged 10 of 160;
  rules written from round 17's misses (a vocative after "dear" in other languages, Japanese and Korean nominal
  orders to the AI or the model, Bengali and Hindi assistant words with their suffixes) caught the same 88 and
  flagged the same 10, passed every test, and are shipped;
- round 19 (fresh22, benign22), measured once, blind: the round-18 rules caught 90 of 99 and flagged 19 of 160
  (13 by the classifier, 2 quoted overrides in French and Russian); a rule written from round 18's misses
  (moving money: approving every pending invoice or payment, sending a sum to an account, as a danger of an
  order to a tool) caught the same 90 and flagged the same 19, passed every test, and is shipped;
- round 20 (fresh23, benign23), measured once, blind: the round-19 rules caught 96 of 100 and flagged 19 of
  160; rules written from round 19's misses and flags ("if this text is processed by an AI assistant, ..." in
  other languages, automated agents and Copilot addressed in other languages, a Hebrew "instruction to the AI
  system:", Portuguese "se você for uma IA"; in another language a rule that matches only quoted words leaves the
  sentence to the classifier; Chinese 提示 alone is a warning on screen, not a prompt) caught the same 96 and
  flagged 17, passed every test, and are shipped. A classifier retrained on fresh11..22 and benign11..22 too
  caught 96 and flagged 8, but flagged 8 of 2,421 corpus sentences (shipped: 5) and a test's quoted attack, so it
  was not shipped;
- round 21 (fresh24, benign24), measured once, blind, with the round-20 rules: 90 of 100 caught, 18 of 159
  flagged (the retrained classifier: 93 and 7);
- round 22 (fresh25, benign25), measured once, blind: the round-20 screen caught 94 of 100 and flagged 13 of 160;
  classifier 9 (trained on fresh11..24 and benign11..24 too, with the built-in corpus's training-quarter lines and
  security writing that quotes attacks as negatives) caught 96 and flagged 3, passed every test, and is shipped.
  Everything before fresh25 and benign25 is training data now; they are held out;
- rounds 23, 24 and 25 (fresh26..28, benign26..28), each measured once, blind, with classifier 9 and the round-20
  rules as shipped, in two ways: line by line as before (each literal \n piece one sentence), and as the service
  screens a passage (rag.screen.detector.pieces: the item split into sentences, caught or flagged when any sentence
  is). Line by line: 96 of 100, 88 of 99 and 91 of 100 caught; 11 of 160, 16 of 158 and 13 of 160 flagged. As a
  passage: 96, 92 and 92 caught; 12, 18 and 14 flagged. They then became training data for classifier 10 and the
  examples rules K were written from;
- rounds 26 and 27 (fresh29, fresh30, benign29, benign30), measured once, blind, read as a passage: the screen
  shipped until then caught 88 and 84 of 100 and flagged 35 and 33 of 160; rules K with a sentence splitter for
  every script caught 91 and 88 and flagged 36 and 33 (one more: not shipped); rules K with classifier 10
  (trained on fresh25..28 and benign25..28 too, with chat-API samples and notices as generated negatives) caught
  89 and 88 and flagged 19 and 19, and 5 of 2,421 corpus sentences against 6, and is shipped. They are held out;
- round 28 (fresh31, benign31; 98 and 158 items, as two lines of each begin with "# "), measured once, blind, with
  the shipped screen (classifier 10, rules K): line by line 94 of 98 caught and 8 of 158 flagged; as a passage 93
  of 98 (94.9 %) caught and 13 of 158 flagged, with the corpus's 5 that is 18 of 2,579 (0.70 %). Held out;
- session 10: read_lines counted as a set's items every line after its "# " header (before, every line starting
  "# " was dropped, so an item written as a Markdown heading was never counted: 2 in each of round 28's files).
  Round 28 re-read that way, as a passage: 95 of 100 caught, 14 of 160 flagged;
- round 29 (fresh32, benign32), measured once, blind, with the same shipped screen: line by line 95 of 100 caught
  and 13 of 160 flagged; as a passage 96 of 100 (96.0 %) caught and 20 of 160 flagged, with the corpus's 5 that is
  25 of 2,582 (0.97 %). Held out until session 14;
- session 14: rounds 26-29 became training data for classifier 11, which also reads every sentence and 2-3 sentence
  window of a multi-sentence look-alike as a negative (rag.training.screen_fit.screened_units); rules L (French
  "le message précédent" and Conventional Commits subjects no longer match). Round 30 (fresh33, benign33), written
  blind in session 10 and kept unread, was measured once for both candidates, as a passage: classifier 10 caught
  98 of 100 and flagged 27 of 160 (with the corpus's 5: 32 of 2,582, 1.24 %); classifier 11 caught 98 and flagged
  14 (19 of 2,582, 0.74 %), and was shipped by the rule written before (docs/agent/injection/session14-decision-
  rule.md);
- round 31 (fresh34, benign34, and benign_howto4: 120 how-to and runbook sentences, the plain benign text issue 23
  names), written blind in session 14 after round 30 had picked, measured once for classifier 11 and for a
  classifier 12 (round 30 trained on too), as a passage: classifier 11 caught 93 of 100 and flagged 6 of 160
  look-alikes, 0 of 120 how-to sentences and 5 of 2,422 corpus sentences (11 of 2,582, 0.43 %; plain text 5 of
  2,542, 0.20 %); classifier 12 caught 92 and flagged 7, 1 and 6, so classifier 11 stays. Every miss is in
  another language than English. Rounds 30 and 31 are held out from the classifier's training;
- session 15: rules M (an AI system called by name in more languages, "if you are a language model", the AI that
  reads this text, "when summarising, write that ...") were written from the misses of rounds 1-31. Round 32
  (fresh35, benign35, benign_howto5), written blind that session, measured once as a passage: rules L caught 95 of
  100 and flagged 14 of 160 look-alikes and 0 of 120 how-to sentences (19 of 2,582, 0.74 %); rules M caught 95 and
  flagged 15 and 0 (20 of 2,582, 0.77 %; plain text 5 of 2,542, 0.20 %) and ship. Held out;
- session 15, after rounds 32, 33 and 34: rules N (what the readable sentences leave out is scored too: code,
  table cells, HTML attributes, text hidden by zero-width spaces), O (the classifier reads windows of English text
  only) and P (a comment line scored on its own), each judged on the next round (fresh36..38, benign36..38,
  benign_howto6..8), written blind after the one before was read, measured once as a passage against the rules
  then shipped: round 33 M 94, N 97 of 100 caught, M 36, N 37 of 160 look-alikes flagged (N: 42 of 2,582, 1.63 %);
  round 34 N and O 97 caught, N 29, O 23 flagged (O: 28 of 2,582, 1.08 %); round 35 O and P alike 97 caught and
  17 flagged (22 of 2,582, 0.85 %; plain text 7 of 2,542, 0.28 %). N, O and P shipped in turn. Held out;
- session 16: rounds 36 (fresh39, benign39, benign_howto9) and 37 (fresh40, benign40, benign_howto10), measured
  once as a passage: classifier 11 + rules Q 95 and 97 of 100 caught, 29 and 33 of 2,582 flagged; classifier 13
  failed the test suite (docs/agent/injection/session16-decision-rule.md). Held out;
- session 17: rounds 38-40 (fresh41..43, benign41..43, benign_howto11..13), measured once as a passage: 94, 95
  and 95 caught, 24, 21 and 33 of 2,582 flagged; with the verifier V2 (trained on rounds 30-39's flagged items)
  round 40 94 and 23, which ships (session17-decision-rule.md). Round 40 is held out from both;
- session 18: rounds 41-44 (fresh44..47, benign44..47, benign_howto14..17), each measured once as a passage:
  97, 92, 83 and 91 (92 with field lines, which ship) of 100 caught; 19, 14, 9 and 13 of 2,582 flagged
  (session18-decision-rule.md: rules R and field lines ship, verifier V3 does not). Held out from every part.
- session 19: rounds 45-47 (fresh48..50, benign48..50, benign_howto18..20), each measured once as a passage: 99,
  98 and 98 of 100 caught; 11, 25 and 19 of 2,582 flagged (session19-decision-rule.md: rules S ship). Held out from
  every part.
- session 20: rounds 48-50 (fresh51..53, benign51..53, benign_howto21..23), each measured once as a passage: 95,
  92 and 97 of 100 caught; 43, 33 and 32 of 2,582 flagged (session20-decision-rule.md: the verifier V4 does not
  ship). Held out from the classifier; the verifier V5 trains on their flagged items;
- session 20: rounds 51-53 (fresh54..56, benign54..56, benign_howto24..26), each measured once as a passage with the
  verifier V5, which ships: 98, 97 and 98 of 100 caught; 14, 31 and 27 of 2,582 flagged. Held out from the
  classifier; the verifier V6 trains on their flagged items;
- session 21: rounds 54-56 (fresh57..59, benign57..59, benign_howto27..29), each measured once as a passage with the
  verifier V6 (an RBF support-vector machine), which ships: 94, 95 and 95 of 100 caught; 7, 4 and 11 of 2,582
  flagged (session21-decision-rule.md; V5: 94, 95, 95 and 13, 24, 26). Held out from every part.

    python -m rag.training.screen_eval            # prints both rates (12 min 35 s on 2 cores, with 53 rounds)
"""

from __future__ import annotations

import sys
import zlib

from rag.config import EVALSETS_DIR

SETS = EVALSETS_DIR / "injection"
ATTACK_SETS = (  # in the order they were written; round r's sets (from round 30) are fresh{r+3}, benign{r+3}, ...
    ("dev.txt", "heldout.txt", "fresh.txt", "fresh2.txt", "issue23.txt", "fresh3.txt")
    + tuple(f"fresh{n}.txt" for n in range(4, 63))
)
BENIGN_SETS = (  # ... and, from round 31, benign_howto{r-27}
    ("benign_howto.txt", "benign_howto2.txt", "benign_howto3.txt", "benign_ai.txt")
    + tuple(f"benign{n}.txt" for n in range(5, 34))
    + tuple(name for n in range(34, 63) for name in (f"benign{n}.txt", f"benign_howto{n - 30}.txt"))
)
SPLIT = {  # what each set was used for (see the module doc)
    **{name: "trained" for name in ATTACK_SETS[:7] + BENIGN_SETS[:4]},
    "fresh5.txt": "trained",
    "benign5.txt": "trained",
    "fresh6.txt": "trained",
    "benign6.txt": "trained",
    "fresh7.txt": "trained",
    "benign7.txt": "trained",
    "fresh8.txt": "trained",
    "benign8.txt": "trained",
    "fresh9.txt": "trained",
    "benign9.txt": "trained",
    "fresh10.txt": "trained",
    "benign10.txt": "trained",
    **{f"fresh{n}.txt": "trained" for n in range(11, 25)},
    **{f"benign{n}.txt": "trained" for n in range(11, 25)},
    **{f"fresh{n}.txt": "trained" for n in range(25, 33)},
    **{f"benign{n}.txt": "trained" for n in range(25, 33)},
    # rounds 30-59 (sessions 14-22): each measured once, blind, then held out from the classifier; rounds 30-53 are
    # training data of the verifier V6 (session 21), rounds 54 to 59 are held out from it too (rules J, session 22,
    # were written from the misses of rounds 54-56)
    **{f"{kind}{n}.txt": "held out" for n in range(33, 63) for kind in ("fresh", "benign")},
    **{f"benign_howto{n}.txt": "held out" for n in range(4, 33)},
}
CORPORA = ("builtin", "scifact", "hotpotqa", "squad")


def read_lines(name: str, skip_hash_lines: bool = False) -> list[str]:
    """A set's items, one per line, without its first line when that is a "# ..." header. An item may itself be a
    Markdown heading ("# Setup" is a look-alike, "### Instruction:" an attack), so later lines are never headers.
    skip_hash_lines=True reads the sets as sessions before 10 did (every line starting "# " dropped): the training
    data of the shipped classifier (rag.training.screen_fit), kept so that its re-train command reproduces it."""
    path = SETS / name
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    if skip_hash_lines:
        return [line for line in lines if line.strip() and not line.startswith("# ")]
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    return [line for line in lines if line.strip()]


def variants(name: str) -> list[list[str]]:
    return [line.split("\\n") for line in read_lines(name)]


def corpus_sentences(quarters=(1, 3), per_corpus: int = 700, per_passage: int = 4) -> dict[str, list[str]]:
    """Up to per_corpus sentences (30-400 characters, the first per_passage of each passage) of each available
    corpus, from the passages whose id hash falls in the given quarters (1 and 3: held out; 0: training; 2: dev)."""
    from rag.config import RagError
    from rag.data.corpus import load_corpus
    from rag.lexicon import sentences

    out: dict[str, list[str]] = {}
    for name in CORPORA:
        try:
            passages = load_corpus(name).passages
        except RagError:
            continue  # not available here
        taken: list[str] = []
        for p in passages:
            if zlib.crc32(p.id.encode()) % 4 not in quarters:
                continue
            taken += [s for s in sentences(p.text)[:per_passage] if 30 <= len(s) <= 400]
            if len(taken) >= per_corpus:
                break
        out[name] = taken[:per_corpus]
    return out


def as_passage(det, item: str) -> bool:
    """Whether the screen flags any sentence of an item read as the service reads a passage: split into sentences
    (rag.screen.detector.pieces), a literal \\n as a line break."""
    from rag.screen.detector import pieces

    return any(det.passage_flags(pieces(item.replace("\\n", "\n"))))


def measure(per_corpus: int = 700) -> dict:
    """{'benign': {source: (flagged, total, examples)}, 'attacks': {set: (caught, total, missed)},
    'passages': {set: (hits, total)}}: the sets line by line (a literal \\n piece is one sentence; a benign item by
    its first line) and, in 'passages', each item as the service screens a passage (as_passage)."""
    from rag.screen.detector import detector

    det = detector()
    benign = {**corpus_sentences(per_corpus=per_corpus), **{name: read_lines(name) for name in BENIGN_SETS}}
    out: dict = {"benign": {}, "attacks": {}, "passages": {}}
    for source, sents in benign.items():
        flagged = [s for s in sents if any(det.flags([s]))]
        out["benign"][source] = (len(flagged), len(sents), flagged)
    for name in ATTACK_SETS:
        sets = variants(name)
        missed = [v for v in sets if not any(det.flags(v))]
        if sets:
            out["attacks"][name] = (len(sets) - len(missed), len(sets), missed)
    for name in ATTACK_SETS + BENIGN_SETS:
        items = read_lines(name) if SPLIT.get(name) == "held out" else []
        if items:
            out["passages"][name] = (sum(as_passage(det, t) for t in items), len(items))
    return out


def main(argv: list[str]) -> None:
    per_corpus = int(argv[0]) if argv else 700
    result = measure(per_corpus)
    total_fp = sum(f for f, _, _ in result["benign"].values())
    total_b = sum(n for _, n, _ in result["benign"].values())
    print("benign sentences (false positives):")
    for source, (f, n, examples) in result["benign"].items():
        print(f"  {source:18s} {f:4d} / {n:5d} flagged  ({f / max(n, 1):.2%})  {SPLIT.get(source, 'held out')}")
        for s in examples[:5]:
            print(f"      e.g. {s[:110]}")
    print(f"  {'all':18s} {total_fp:4d} / {total_b:5d} flagged  ({total_fp / max(total_b, 1):.2%})")
    print("attack phrasings (recall):")
    for name, (c, n, missed) in result["attacks"].items():
        print(f"  {name:18s} {c:4d} / {n:4d} caught   ({c / max(n, 1):.1%})  {SPLIT[name]}")
        for v in missed[:6]:
            print(f"      missed: {' | '.join(v)[:110]}")
    print("held-out sets read as the service screens a passage (any sentence flagged):")
    for name, (hits, n) in result["passages"].items():
        what = "caught" if name.startswith("fresh") else "flagged"
        print(f"  {name:18s} {hits:4d} / {n:4d} {what}  ({hits / max(n, 1):.1%})")


if __name__ == "__main__":
    main(sys.argv[1:])
