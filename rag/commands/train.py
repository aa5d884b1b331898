"""`rag train ...`: `reader` (the learned span reader), `screen` (the injection classifier), `screen-head` (its logit
head refitted with documentation as benign text), `screen-verifier` (its second look), `hop` (the multi-hop decision),
`abstain` (does a passage answer?) and `sentences` (the answer-sentence ranker). Each prints its figures as JSON on
stdout and its progress on stderr."""

from __future__ import annotations

from pathlib import Path

import typer

from rag.commands.common import console, err_console, handle_errors


def train_reader(
    epochs: float = typer.Option(3.0, help="Passes over the training questions (the most; --minutes may stop it)."),
    minutes: float = typer.Option(
        None, help="Stop after this many minutes of training; the learning rate decays to 0."
    ),
    batch: int = typer.Option(16, help="Windows per step."),
    lr: float = typer.Option(1e-3, help="Peak learning rate (linear warm-up, then linear decay)."),
    limit: int = typer.Option(None, help="Train on the first N questions only (a quick check)."),
    threads: int = typer.Option(1, help="torch CPU threads (1 is fastest on a busy 2-core machine)."),
    out: Path = typer.Option(
        None, help="Where to write the weights (default: the committed rag/models/reader_weights.npz)."
    ),
    checkpoint_dir: Path = typer.Option(
        None, help="Checkpoints every 25 steps; a killed run started again with the same options resumes."
    ),
    hotpot: bool = typer.Option(
        False, help="Second stage: two-paragraph reading on HotpotQA's distractor sample, mixed with SQuAD."
    ),
    init: Path = typer.Option(None, help="Start from these weights (the first stage's) instead of MiniLM alone."),
    soup: bool = typer.Option(False, help="Save the mean of --init's weights and the trained ones (a model soup)."),
    negatives: bool = typer.Option(
        False, help="Third stage: retrieved passages that do not answer the question, read as 'no answer'."
    ),
):
    """Fine-tune the span reader (adapters on the packaged MiniLM) on SQuAD's first 40 articles; then, with
    --hotpot --init, on HotpotQA's two-paragraph questions; with --negatives --init, on passages that do not answer."""
    _train_reader(epochs, minutes, batch, lr, limit, threads, out, checkpoint_dir, hotpot, init, soup, negatives)


@handle_errors
def _train_reader(epochs, minutes, batch, lr, limit, threads, out, checkpoint_dir, hotpot, init, soup, negatives):
    import json

    from rag.answer.reader import WEIGHTS
    from rag.training.reader_fit import train

    info = train(
        out=Path(out) if out else WEIGHTS,
        epochs=epochs,
        minutes=minutes,
        batch=batch,
        lr=lr,
        limit=limit,
        threads=threads,
        checkpoint_dir=checkpoint_dir,
        hotpot=hotpot,
        init=Path(init) if init else None,
        soup=soup,
        negatives=negatives,
        progress=print_progress,
    )
    console.print_json(json.dumps(info))


def train_screen(
    epochs: float = typer.Option(2.0, help="Passes over the training texts."),
    batch: int = typer.Option(32, help="Texts per step."),
    lr: float = typer.Option(1e-3, help="Peak learning rate (linear warm-up, then linear decay)."),
    threads: int = typer.Option(2, help="torch CPU threads."),
    seed: int = typer.Option(0, help="Seed for the generated texts, the shuffling and the adapters."),
    soup: int = typer.Option(
        1, min=1, max=4, help="Train this many runs (seeds SEED, SEED+1, ...) and average them (a model soup)."
    ),
    out: Path = typer.Option(
        None, help="Where to write the weights (default: the committed rag/screen/classifier.py.npz)."
    ),
):
    """Fine-tune the injection classifier (adapters on the packaged MiniLM) that screens retrieved passages."""
    _train_screen(epochs, batch, lr, threads, seed, soup, out)


@handle_errors
def _train_screen(epochs, batch, lr, threads, seed, soup, out):
    import json

    from rag.training.screen_fit import train, train_soup

    options = {"epochs": epochs, "batch": batch, "lr": lr, "threads": threads}
    out = Path(out) if out else None
    if soup > 1:
        info = train_soup(out=out, runs=soup, seed=seed, progress=print_progress, **options)
    else:
        info = train(out=out, seed=seed, progress=print_progress, **options)
    console.print_json(json.dumps(info))


def train_screen_verifier(
    threads: int = typer.Option(2, help="torch CPU threads (for the one-time ONNX export of SmolLM2's first layers)."),
    out: Path = typer.Option(
        None, help="Where to write the weights (default: the committed rag/screen/verifier.py.npz)."
    ),
):
    """Fit the screen's verifier: an RBF support-vector machine over SmolLM2's hidden states that takes a second look at
    each passage the injection screen flags, and drops the flags of text about an AI system rather than addressed to
    it. Encodes about 6,100 texts (about 12 minutes on 2 cores) and prints the figures cross-validated by round."""
    _train_screen_verifier(threads, out)


@handle_errors
def _train_screen_verifier(threads, out):
    import json

    from rag.training.verifier_fit import train

    info = train(out=Path(out) if out else None, threads=threads, progress=print_progress)
    console.print_json(json.dumps(info))


def train_screen_head(
    seed: int = typer.Option(0, help="Seed for the draw of training texts and README pieces."),
    out: Path = typer.Option(
        None,
        help="Where to write the weights (default: the committed rag/models/injection_classifier.npz and its card).",
    ),
):
    """Refit the injection classifier's logit head with documentation as benign text: the README-style descriptions
    that installed packages ship, beside a sample of the classifier's own training texts; MiniLM and its adapters stay
    as trained (about 8 minutes on 2 cores)."""
    _train_screen_head(seed, out)


@handle_errors
def _train_screen_head(seed, out):
    import json

    from rag.training.screen_head import refit_head

    info = refit_head(out=Path(out) if out else None, seed=seed, progress=print_progress)
    console.print_json(json.dumps(info))


def train_hop(
    seed: int = typer.Option(0, help="Seed for the draw of single-hop questions."),
    out: Path = typer.Option(
        None, help="Where to write the weights (default: the committed rag/models/multihop_weights.npz)."
    ),
):
    """Fit the multi-hop decision (does a question need a second retrieval hop?) on HotpotQA development questions
    against SQuAD training questions, and choose its threshold by cross-validation (seconds)."""
    _train_hop(seed, out)


@handle_errors
def _train_hop(seed, out):
    import json

    from rag.training.multihop_fit import train

    info = train(out=Path(out) if out else None, seed=seed, progress=print_progress)
    console.print_json(json.dumps(info))


def train_abstain(
    seed: int = typer.Option(0, help="Seed for the draw of SQuAD training questions."),
    out: Path = typer.Option(
        None, help="Where to write the weights (default: the committed rag/models/abstain_weights.npz)."
    ),
    threshold_only: bool = typer.Option(
        False, "--threshold-only", help="Keep the fitted weights; choose the threshold again on the built-in sets."
    ),
):
    """Fit the answerability decision (do the retrieved passages answer the question?) on SQuAD training and HotpotQA
    development questions, each read with its retrieved passages, with the answering ones removed and (SQuAD) with
    other articles' passages only; choose the threshold on the built-in development sets (about 25 minutes)."""
    _train_abstain(seed, out, threshold_only)


@handle_errors
def _train_abstain(seed, out, threshold_only):
    import json

    from rag.training.abstain_fit import calibrate, train

    if threshold_only:
        info = calibrate(Path(out) if out else None, progress=print_progress)
    else:
        info = train(out=Path(out) if out else None, seed=seed, progress=print_progress)
    console.print_json(json.dumps(info))


def train_sentences(
    out: Path = typer.Option(
        None, help="Where to write the weights (default: the committed rag/models/sentence_rank_weights.npz)."
    ),
):
    """Fit the answer-sentence ranker on the built-in development question sets: the agent answers each one (a few
    minutes), then a logistic regression learns which passage sentence holds the key fact. Prints the
    cross-validated figures (each set scored by a model fitted on the others)."""
    _train_sentences(out)


@handle_errors
def _train_sentences(out):
    import json

    from rag.training.sentence_rank_fit import train

    info = train(out=Path(out) if out else None, progress=print_progress)
    console.print_json(json.dumps(info))


def print_progress(line: str) -> None:
    """A training loop's progress line, on stderr (stdout carries the JSON of figures)."""
    err_console.print(line, highlight=False)
