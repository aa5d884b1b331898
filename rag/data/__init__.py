"""Layer 1, data: passages, queries and qrels; readers for folders (Markdown, HTML, PDF, RST), BEIR, SQuAD and
HotpotQA; chunking; the limits a user's folder is read under; the synthetic corpus for scale tests."""
