"""The grammar words of the injection screen's rules M (rag.screen.rules), in languages other than English:
the second person and "are", the verbs of reading and summarising, "this", the frame "when summarising, write that
...", and the signs that a sentence speaks about an AI system rather than to it (a modal or "sometimes" after its
name, "but" or "so" after the comma). The words that name an AI system are in rag.screen.languages.
Each is a regular expression over casefolded text.
"""

from __future__ import annotations

from rag.screen.tables import table

TABLE = table("grammar")


YOU_ML = TABLE["YOU_ML"]
ARE_ML = TABLE["ARE_ML"]
ARE_YOU_ML = TABLE["ARE_YOU_ML"]
ARTICLE_ML = TABLE["ARTICLE_ML"]
READ_ML = TABLE["READ_ML"]
THIS_ML = TABLE["THIS_ML"]
THIS_CJK = TABLE["THIS_CJK"]
WHEN_SUMMARISING_ML = TABLE["WHEN_SUMMARISING_ML"]
DICTATE_VERB_ML = TABLE["DICTATE_VERB_ML"]
TOPIC_ORDER_JA_KO = TABLE["TOPIC_ORDER_JA_KO"]
ABOUT_IT_ML = TABLE["ABOUT_IT_ML"]
CONJUNCTION_ML = TABLE["CONJUNCTION_ML"]
