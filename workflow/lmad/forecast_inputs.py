"""What the cost forecast (lmad.forecast) reads without a model: a backbone's questions, a
model's prompt tokens (its local tokenizer, else 4 characters a token) and which requests its call
store already holds."""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from . import layout
from .data.loaders import load_dataset_spec, select
from .plan import Plan

REPO = Path(__file__).resolve().parents[2]
CHARS_PER_TOKEN = 4


# ------------------------------------------------------------------------------- questions

@dataclass
class Questions:
    """One backbone's questions of one dataset: the rows when they can be read without a model
    (the run's table, else the local source file), else only how many were asked for."""

    n: int
    rows: list[dict] | None
    source: str  # where n comes from


def questions_of(plan: Plan, backbone: str, dataset: str, workdir: Path) -> Questions:
    spec = plan.config["datasets"][dataset]
    limit = plan.backbone_n.get(layout.model_of(backbone))
    own = workdir / plan.questions.path(backbone, dataset)
    if own.exists():
        from .schemas import read_table

        rows = read_table("questions", own).to_dicts()
        return Questions(len(rows), rows, "the run's questions table")
    full = workdir / layout.questions(dataset)
    rows, source = None, ""
    if full.exists():
        from .schemas import read_table

        rows, source = read_table("questions", full).to_dicts(), "the run's questions table"
    elif spec.get("source", "jsonl") in ("jsonl", "local"):
        rows, source = load_dataset_spec(plan.questions.dataset_spec(dataset), REPO), "the local source file"
    if rows is None:
        n = min(x for x in (spec.get("n"), limit) if x is not None) if (spec.get("n") or limit) else 0
        return Questions(n, None, f"n as configured (source {spec.get('source')}: not read offline)")
    if limit is not None:
        rows = select(rows, limit, plan.config["seed"])
    return Questions(len(rows), rows, source)


def demo_rows(dataset: str, spec: dict) -> list[dict]:
    """The bundled demo questions of the same benchmark: a sample to estimate prompt sizes by."""
    from .data.loaders import dataset_type

    kind = dataset_type(dataset, spec)
    for path in sorted((REPO / "data" / "demo").glob(f"{kind}.*")):
        try:
            return load_dataset_spec({"name": dataset, "type": kind, "source": "local", "path": str(path),
                                      "seed": 0}, REPO)
        except Exception:  # a demo file this benchmark's loader cannot read: no sample
            return []
    return []


# ------------------------------------------------------------------------------ tokens

def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def messages_text(messages) -> str:
    return "\n".join(content for _, content in messages)


def tokenizer_of(spec: dict, workdir: Path) -> Callable | None:
    """A function counting a request's prompt tokens as the model would, where that needs no model:
    the test double's word count; a local tokenizer with its chat template (a converted GGUF, a
    local folder, or a hub id already in the local cache). None: estimate instead."""
    if spec["backend"] == "scripted":
        from .backends.scripted import ScriptedBackend

        kwargs = {k: v for k, v in spec.items() if k in ("name", "judge_mode")}
        return ScriptedBackend(**kwargs).prompt_tokens
    where = spec.get("model")
    if not where:
        return None
    local = workdir / where if not Path(where).is_absolute() else Path(where)
    try:
        from transformers import AutoTokenizer

        tok = (AutoTokenizer.from_pretrained(str(local)) if local.is_dir()
               else AutoTokenizer.from_pretrained(where, local_files_only=True))
    except Exception:  # no local copy (a hub id offline), or no transformers: estimate
        return None
    kwargs = dict(spec.get("chat_template_kwargs") or {})

    def count(req) -> int:
        return len(tok.apply_chat_template(req.chat(), add_generation_prompt=True, tokenize=True,
                                           return_dict=False, **kwargs))
    return count



class PromptCounter:
    """Prompt tokens of one model: its tokenizer where local, else characters / 4."""

    def __init__(self, count: Callable | None):
        self.count = count

    @property
    def kind(self) -> str:
        return "exact" if self.count else "est."

    def request(self, req) -> int:
        return self.count(req) if self.count else estimate_tokens(messages_text(req.messages))

    def text(self, text: str) -> int:
        return estimate_tokens(text)


# ------------------------------------------------------------------------------ the call store

class CallStore:
    """The call store of one model, read only: which requests are cached (``CachedBackend``'s key)."""

    def __init__(self, spec: dict, cache_dir: Path):
        from .backends.cache import CachedBackend
        from .backends.identity import backend_identity, role_sampling_of, weights_identity

        try:
            spec = {k: v for k, v in spec.items() if k != "committee"}
            self.backend = CachedBackend(no_model, backend_identity(spec), cache_dir,
                                         weights_id=weights_identity(spec), role_sampling=role_sampling_of(spec))
        except Exception:  # an identity needing files not there yet (a GGUF not converted): nothing cached
            self.backend = None

    def cached(self, requests: list) -> int:
        if self.backend is None or not requests or not self.backend.root.is_dir():
            return 0
        keys, replies = self.backend.lookup(requests)
        return len({k for k, reply in zip(keys, replies) if reply is not None})


def no_model():
    raise RuntimeError("the forecast never starts a model")
