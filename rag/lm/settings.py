"""The LM's settings objects, free of torch so that the CLI reads its option defaults from them.

GPTConfig is the model's shape, TrainConfig one training run, ConvergeSettings the to-convergence study;
`training_config` builds a TrainConfig from values named like their fields and checks them as the CLI options are
checked.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rag.config import RagError

POSITIONS = ("learned", "sinusoidal", "rope")
INITS = ("gpt2", "scaled")


@dataclass
class GPTConfig:
    vocab: int = 10000
    dim: int = 256
    layers: int = 6
    heads: int = 8
    context: int = 128
    tie: bool = True
    pos: str = "learned"
    init_std: float = 0.02  # the std of init "gpt2"
    init: str = "gpt2"  # gpt2: N(0, init_std); scaled: N(0, 1/sqrt(d))
    dropout: float = 0.0  # on the embeddings, the attention weights and both residual branches (training only)

    def std(self) -> float:
        return self.dim**-0.5 if self.init == "scaled" else self.init_std

    def check(self) -> "GPTConfig":
        """Refuse impossible shapes before any weight is allocated."""
        if self.dim % self.heads:
            raise RagError(
                f"d={self.dim} is not divisible by heads={self.heads}; pick d a multiple of {self.heads} or change --heads"
            )
        if self.pos not in POSITIONS:
            raise RagError(f"unknown --pos {self.pos!r}; use one of {', '.join(POSITIONS)}")
        if self.init not in INITS:
            raise RagError(f"unknown --init {self.init!r}; use one of {', '.join(INITS)}")
        if self.pos == "rope" and (self.dim // self.heads) % 2:
            raise RagError(f"rope needs an even head size, got d/heads={self.dim // self.heads}")
        if not 0.0 <= self.dropout < 1.0:
            raise RagError(f"--dropout must be in [0, 1), got {self.dropout:g}")
        if min(self.vocab, self.dim, self.layers, self.heads, self.context) < 1:
            raise RagError("vocab, dim, layers, heads and context must all be >= 1")
        return self

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class TrainConfig:
    corpus: str = "wiki-lm"
    out: str = "results/lm/d256"
    model: GPTConfig = field(default_factory=GPTConfig)
    batch: int = 16
    tokens: int | None = None  # token budget (all ranks together); else epochs; else minutes
    epochs: float | None = None
    minutes: float | None = None
    lr: float | None = None  # None: 2e-3 * sqrt(128 / d)
    min_lr_ratio: float = 0.1
    warmup: int | None = None  # None: warmup_frac of the steps if given, else 10% of the steps, at most 100
    warmup_frac: float | None = None  # warm-up as a fixed fraction of each run's steps (the iso-FLOP grid: 0.1)
    weight_decay: float = 0.1
    clip: float = 1.0
    seed: int = 1337
    slices: int = 4  # checkpoints per run (or one per epoch, whichever is more)
    eval_tokens: int | None = 32768  # valid/test tokens scored at the end (None: whole split)
    slice_eval_tokens: int = 2048  # valid tokens scored at each checkpoint (for the curves)
    threads: int | None = None
    precision: str = "auto"  # auto | fp32 | bf16 | bf16-head (see runtime.auto_precision)
    compile: str = "auto"  # auto | on | off
    samples: int = 3  # generated sentences at the end
    resume: bool = False
    best_val: bool = False  # score the best validation checkpoint (of the slice evaluations) on valid/test
    patience: int | None = None  # early stopping: stop after this many slice evaluations without improvement
    measure_peak: bool = True  # measure the matmul peaks for MFU at the end (a few seconds per process)
    eval_every: float | None = None  # validate every this fraction of an epoch (instead of `slices` per run)
    curve_test: bool = False  # also score the test split at each validation (the curve only; never for selection)

    def learning_rate(self) -> float:
        return self.lr if self.lr is not None else 2e-3 * math.sqrt(128 / self.model.dim)


# Regularisation per width (dropout, weight decay). d = 64, 128 and 256: what a scan at each width's epoch cap chose
# (docs/lm/converge/scan/: no dropout did better at every validation point; weight decay 0.1 helped d = 128 by 0.010
# bits per byte, and moved d = 64 and 256 by 0.001 or less, where the lowest was without it).
# d = 512 and 1024: not scanned, more dropout as the model grows on the same 1.8M training tokens. A run records
# what it used.
PRESETS = {64: (0.0, 0.0), 128: (0.0, 0.1), 256: (0.0, 0.0), 512: (0.2, 0.1), 1024: (0.2, 0.1)}


def preset(dim: int) -> tuple[float, float]:
    """(dropout, weight decay) of the nearest preset width."""
    return PRESETS[min(PRESETS, key=lambda d: (abs(math.log(d / dim)), d))]


@dataclass
class ConvergeSettings:
    max_epochs: float = 12.0
    eval_every: float = 0.5  # fraction of an epoch between validations
    patience: int = 3  # validations without improvement before stopping
    dropout: float | None = None  # None: the preset of each width
    weight_decay: float | None = None  # None: the preset of each width

    def evaluations(self) -> int:
        """Validations the epoch cap allows."""
        return math.floor(self.max_epochs / self.eval_every + 1e-9)

    def check(self) -> "ConvergeSettings":
        if not self.max_epochs > 0:
            raise RagError(f"--max-epochs must be greater than 0, got {self.max_epochs:g}")
        if not 0 < self.eval_every <= self.max_epochs:
            raise RagError(
                f"--eval-every must be a fraction of an epoch in (0, --max-epochs={self.max_epochs:g}], "
                f"got {self.eval_every:g}"
            )
        if self.patience < 1:
            raise RagError(f"--patience must be at least 1, got {self.patience}")
        n = self.evaluations()
        if self.patience >= n:
            raise RagError(
                f"--patience {self.patience} can never stop the run: {self.max_epochs:g} epoch(s) at --eval-every "
                f"{self.eval_every:g} allow {n} validation(s); use a patience below {n} or a larger --max-epochs"
            )
        for name, value in (("--dropout", self.dropout), ("--weight-decay", self.weight_decay)):
            if value is not None and not 0 <= value < 1:
                raise RagError(f"{name} must be in [0, 1), got {value:g}")
        return self

    def regularisation(self, dim: int) -> tuple[float, float]:
        drop, wd = preset(dim)
        return (drop if self.dropout is None else self.dropout, wd if self.weight_decay is None else self.weight_decay)


# The TrainConfig and GPTConfig fields that `rag lm` commands set from options of the same name.
OPTION_FIELDS = (
    "corpus", "out", "dim", "layers", "heads", "vocab", "context", "tie", "pos", "init", "epochs", "tokens",
    "minutes", "batch", "lr", "seed", "threads", "precision", "compile", "eval_tokens", "slices", "resume",
)  # fmt: skip


def check_positive(option: str, value: float | None) -> None:
    if value is not None and not value > 0:
        raise RagError(f"{option} must be greater than 0, got {value:g}")


def config_of(**fields) -> TrainConfig:
    """A TrainConfig from keyword values, each named like a GPTConfig or a TrainConfig field."""
    model = {k: v for k, v in fields.items() if k in GPTConfig.__dataclass_fields__}
    return TrainConfig(model=GPTConfig(**model), **{k: v for k, v in fields.items() if k not in model})


def training_config(**options) -> TrainConfig:
    """config_of, checked as the options are: --out is no file; --epochs, --minutes and --lr are above 0;
    eval_tokens 0 scores the whole splits (None)."""
    out = options.get("out")
    if out is not None and Path(out).exists() and not Path(out).is_dir():
        raise RagError(f"--out {out} is a file; give a folder")
    for name in ("epochs", "minutes", "lr"):
        check_positive(f"--{name}", options.get(name))
    if "eval_tokens" in options:
        options["eval_tokens"] = options["eval_tokens"] or None
    return config_of(**options)
