"""What a config will cost before it runs: per model, the calls and tokens its jobs will compute.

``python -m lmad.forecast --configfile config/paper.yaml [--config k=v ...] [--tokens-per-s MODEL=N ...]
[--workdir DIR] [--by-stage]`` loads and checks the config as rules/common.smk does, asks the run's
:class:`~lmad.plan.Plan` which backbones, datasets, methods, agents, rounds and iterations run,
and counts each model's calls from the protocols (no model is started, nothing is written):

* **calls** are exact where a method always makes the same number (CoT, the proposals, MAD and
  every protocol with the ``rounds`` stop rule, the chair's synthesis, the judge's battery when
  the questions are known) and an upper bound (``≤``) where a question can stop early or a call
  be skipped: Consensus (agreement), dMAD (the judge; the moderator only for undecided ones),
  every LMAD policy (agreement, the guard, a truncated resolver; the relation check only for a
  repair with a claim) and the judge (rule-scored, empty and repeated predictions are not asked).
  Calls two methods send identically (MAD and Consensus revise alike, Chair's rounds are MAD's,
  DMAD and TrueDMAD open alike, every LMAD chain policy's iteration 0) are counted once, as the
  call cache computes them once.
* **cached**: calls whose request is known before the run (``generate`` of CoT and the proposals,
  the judge's known-answer battery) looked up in the call store by the key the backend uses; and
  the calls of stages whose tables already exist (a finished run: they cost nothing unless their
  inputs change). Both cost nothing.
* **prompt tokens**: the first stage's prompts are rendered with the project's prompt code and
  counted with the model's tokenizer where it is available locally (``exact``), else estimated at
  4 characters a token (``est.``); a later call's prompt embeds earlier replies, bounded by their
  ``max_tokens`` (``≤``). **generated tokens**: ``max_tokens`` per call, an upper bound.
* **wall time** = generated tokens to compute ÷ the model's measured generated tokens/s (the
  user's ``--tokens-per-s``; prefill and queueing not counted). No default figure exists.
"""
from __future__ import annotations

import argparse
import math
import os
import re
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import yaml

from . import layout
from .data.loaders import load_dataset_spec, select
from .plan import Plan
from .prompts import load_prompt
from .protocols.debate.spec import ANSWER, MANNERS, Advise, Judge, Reason, Revise, Solve, Turn
from .registry import METHODS
from .solver import derive_seed, solver_request

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "config" / "schema" / "config.schema.yaml"
CHARS_PER_TOKEN = 4

#: Config features whose calls this forecast does not count (each adds calls when on).
def not_forecast(config: dict, plan: Plan) -> list[str]:
    out = []
    if config["finalizers"]["enabled"]:
        out.append("finalizers")
    if config["societies"]["enabled"] or any(METHODS[m].society for m in plan.methods):
        out.append("societies")
    if "sc-matched" in plan.methods:
        out.append("sc-matched")
    if plan.disagreement_on():
        out.append("disagreement layers (self_report / pushback)")
    if config["disagreement"]["probe"]:
        out.append("disagreement probe")
    if config["process"]["rubric"]:
        out.append("process rubric")
    if config["jury"]["pair"]:
        out.append("jury")
    if config.get("committees") and any(b in config["committees"] for b in config["backbones"]):
        out.append("committee backbones")
    return out


# ------------------------------------------------------------------------------ the config

def load_config(configfiles: list[str], overrides: list[str] = (), allow_test_double: bool | None = None) -> dict:
    """The config as the Snakefile sees it: the files merged in order, ``--config k=v`` on top
    (values read as YAML, as Snakemake does), the method names, the schema (its defaults filled),
    serve-by-default and the checks of rules/common.smk."""
    from snakemake.utils import update_config, validate

    from .config_checks import check_config, check_method_names, schema_error, serve_by_default

    config: dict = {}
    for path in configfiles:
        update_config(config, yaml.safe_load(Path(path).read_text()) or {})
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--config {item!r}: expected KEY=VALUE")
        update_config(config, {key: yaml.safe_load(value)})
    check_method_names(config)
    try:
        validate(config, schema=str(SCHEMA))
    except Exception:
        raise ValueError(schema_error(config, str(SCHEMA)) or "config does not match its schema") from None
    serve_by_default(config)
    if allow_test_double is None:
        allow_test_double = os.environ.get("LMAD_ALLOW_TEST_DOUBLE") == "1"
    check_config(config, allow_test_double=allow_test_double)
    return config


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
    own = workdir / plan.questions_path(backbone, dataset)
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
        rows, source = load_dataset_spec(plan.dataset_spec(dataset), REPO), "the local source file"
    if rows is None:
        n = min(x for x in (spec.get("n"), limit) if x is not None) if (spec.get("n") or limit) else 0
        return Questions(n, None, f"n as configured (source {spec.get('source')}: not read offline)")
    if limit is not None:
        rows = select(rows, limit, plan.config["seed"])
    return Questions(len(rows), rows, source)


def _demo_rows(dataset: str, spec: dict) -> list[dict]:
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


# ------------------------------------------------------------------------------ call groups

@dataclass
class Group:
    """Calls of one kind (one stage of one method or stage job) of one model."""

    model: str
    stage: str
    calls: int
    bound: bool  # calls is an upper bound (early stopping or skipped calls)
    max_tokens: int  # per call
    prompt_tokens: int
    prompt_kind: str  # "exact" | "est." | "≤"
    cached: int = 0  # calls found in the call store or whose tables exist
    methods: tuple[str, ...] = ()

    @property
    def to_compute(self) -> int:
        return self.calls - self.cached

    @property
    def generated(self) -> int:
        return self.to_compute * self.max_tokens

    @property
    def prompt_to_compute(self) -> int:
        return 0 if not self.calls else round(self.prompt_tokens * self.to_compute / self.calls)


@dataclass
class Forecast:
    config: dict
    groups: list[Group] = field(default_factory=list)
    questions: dict[tuple[str, str], Questions] = field(default_factory=dict)
    tokenizers: dict[str, str] = field(default_factory=dict)  # model -> "tokenizer" | "chars/4"
    skipped: list[str] = field(default_factory=list)

    def by_model(self) -> dict[str, dict]:
        out: dict[str, dict] = {}
        for g in self.groups:
            m = out.setdefault(g.model, {"calls": 0, "bound": False, "cached": 0, "prompt_tokens": 0,
                                         "prompt_kinds": set(), "generated": 0})
            m["calls"] += g.calls
            m["bound"] |= g.bound
            m["cached"] += g.cached
            m["prompt_tokens"] += g.prompt_to_compute
            if g.to_compute:
                m["prompt_kinds"].add(g.prompt_kind)
            m["generated"] += g.generated
        return out


class _Counter:
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


class _Store:
    """The call store of one model, read only: which requests are cached (``CachedBackend``'s key)."""

    def __init__(self, spec: dict, cache_dir: Path):
        from .backends.cache import CachedBackend
        from .backends.identity import backend_identity, role_sampling_of, weights_identity

        try:
            spec = {k: v for k, v in spec.items() if k != "committee"}
            self.backend = CachedBackend(_no_model, backend_identity(spec), cache_dir,
                                         weights_id=weights_identity(spec), role_sampling=role_sampling_of(spec))
        except Exception:  # an identity needing files not there yet (a GGUF not converted): nothing cached
            self.backend = None

    def cached(self, requests: list) -> int:
        if self.backend is None or not requests or not self.backend.root.is_dir():
            return 0
        keys, replies = self.backend.lookup(requests)
        return len({k for k, reply in zip(keys, replies) if reply is not None})


def _no_model():
    raise RuntimeError("the forecast never starts a model")


def _exists(workdir: Path, paths: list[str]) -> bool:
    return bool(paths) and all((workdir / p).exists() for p in paths)


def forecast(config: dict, workdir: str | Path = ".") -> Forecast:
    """Every call group of every model of the run ``config`` describes (validated, defaults filled)."""
    workdir = Path(workdir)
    plan = Plan(config)
    out = Forecast(config, skipped=not_forecast(config, plan))
    cache_dir = Path(config["cache_dir"])
    cache_dir = cache_dir if cache_dir.is_absolute() else workdir / cache_dir
    counters: dict[str, _Counter] = {}
    stores: dict[str, _Store] = {}

    def counter(model: str) -> _Counter:
        if model not in counters:
            spec = plan.model_spec(model)
            counters[model] = _Counter(tokenizer_of(spec, workdir))
            out.tokenizers[model] = "tokenizer" if counters[model].count else "chars/4"
            stores[model] = _Store(spec, cache_dir)
        return counters[model]

    committees = config.get("committees") or {}
    for backbone in plan.backbones:
        if layout.model_of(backbone) in committees:
            continue
        for d in plan.datasets:
            out.questions[(backbone, d)] = questions_of(plan, backbone, d, workdir)
        _backbone_groups(plan, backbone, out, counter, stores, workdir)
    _judge_groups(plan, out, counter, stores, workdir)
    return out


def _base_prompts(plan: Plan, backbone: str, out: Forecast, count: _Counter) -> tuple[dict, int, str]:
    """Per dataset, the mean solver prompt of its questions (tokens) and how it was counted; the
    questions' total; the kind (exact where every dataset's rows are known)."""
    solver = load_prompt(plan.config["prompts"]["solver"])
    S = plan.config["solver"]["max_tokens"]
    means, kind = {}, count.kind
    for d in plan.datasets:
        q = out.questions[(backbone, d)]
        rows = q.rows
        if rows is None:
            rows, kind = _demo_rows(d, plan.config["datasets"][d]), "est."
        sizes = [count.request(solver_request(solver, r, 0.0, 0, S)) if q.rows is not None else
                 estimate_tokens(messages_text(solver_request(solver, r, 0.0, 0, S).messages)) for r in rows]
        means[d] = sum(sizes) / len(sizes) if sizes else 0
    return means, kind


def _template(plan: Plan, role: str) -> int:
    path = plan.config["prompts"].get(role)
    if not path or not Path(path).exists():
        return 0
    p = load_prompt(path)
    return estimate_tokens(p.system + p.user)


def _backbone_groups(plan: Plan, backbone: str, out: Forecast, counter, stores, workdir: Path) -> None:
    config, model = plan.config, layout.model_of(backbone)
    count, store = counter(model), stores[model]
    temps = plan.agent_temperatures(backbone)
    K, S = len(temps), config["solver"]["max_tokens"]
    seed = config["seed"] if layout.replicate_of(backbone) is None else layout.replicate_of(backbone)
    qs = {d: out.questions[(backbone, d)] for d in plan.datasets}
    N = sum(q.n for q in qs.values())
    base, base_kind = _base_prompts(plan, backbone, out, count)
    base_total = sum(base[d] * qs[d].n for d in plan.datasets)  # one solver prompt per question
    solver = load_prompt(config["prompts"]["solver"])

    def add(stage: str, calls: int, bound: bool, max_tokens: int, prompt: float, kind: str, cached: int = 0,
            methods=()):
        if calls:
            out.groups.append(Group(model, stage, calls, bound, max_tokens, round(prompt), kind, min(cached, calls),
                                    tuple(methods)))

    # ---- generate: CoT (one agent at 0) and the proposals (the personas); requests known exactly
    proposals_needed = ("sc" in plan.methods or any(not METHODS[m].society for m in plan.lmad_methods)
                        or any(plan.debate_setting(m, backbone).shares_proposals for m in plan.debate_methods))
    for stage, wanted in (("cot", "cot" in plan.methods), ("proposals", proposals_needed)):
        if not wanted:
            continue
        stage_temps = plan.stage_temperatures(stage, temps)
        requests, prompt = [], 0.0
        for d, q in qs.items():
            if q.rows is None:
                prompt += base[d] * q.n * len(stage_temps)
                continue
            for r in q.rows:
                for agent, t in enumerate(stage_temps):
                    req = solver_request(solver, r, t, derive_seed(seed, r["qid"], agent), S)
                    requests.append(req)
                    prompt += count.request(req)
        users = [m for m in plan.methods if METHODS[m].samples == stage]
        add(f"generate {stage}", N * len(stage_temps), False, S, prompt, base_kind, store.cached(requests), users)

    # ---- debate baselines: per round, methods whose requests coincide are one group
    shared: dict[tuple, dict] = {}
    for m in plan.debate_methods:
        setting = plan.debate_setting(m, backbone)
        proto = METHODS[m].protocol
        k = len(setting.temperatures)
        aux = plan.aux_max_tokens(m)
        for t in range(setting.rounds + 1):
            if t == 0 and setting.shares_proposals:
                continue  # the proposals, counted above
            signature = (proto.opening, proto.exchange if t else (), setting.temperatures, setting.manners,
                         setting.shares_proposals, METHODS[m].tone, t)
            entry = shared.setdefault(signature, {"methods": [], "exact": False, "bound": False})
            entry["methods"].append(m)
            early = proto.stop != "rounds" and t > 0
            entry["exact" if not early else "bound"] = True
            entry.setdefault("stages", _round_calls(plan, proto.stages(t), setting, k, S, aux, t))
            entry.setdefault("tables", [layout.debate_round(backbone, d, m, t) for d in plan.datasets])
            if t == setting.rounds and proto.final in ("moderator", "chair"):
                role = "debate_moderator" if proto.final == "moderator" else "chair"
                final = {"moderator": aux.get("moderator"), "chair": aux.get("chair")}[proto.final]
                # the chair synthesizes every question (MAD's rounds never stop early); the
                # moderator answers only those the judge left undecided
                add(f"{m} round {t} {proto.final}", N, proto.final == "moderator", final,
                    base_total + N * (_template(plan, role) + k * S), "≤",
                    N if _exists(workdir, [layout.debate_round(backbone, d, m, t) for d in plan.datasets]) else 0,
                    [m])
    for signature, entry in shared.items():
        t = signature[-1]
        done = _exists(workdir, entry["tables"])
        for label, per_q, max_tokens, embedded, role in entry["stages"]:
            calls = N * per_q
            names = "/".join(entry["methods"])
            first_stage = t == 0 and not embedded
            add(f"{names} round {t} {label}", calls, not entry["exact"], max_tokens,
                per_q * (base_total + N * (_template(plan, role) + embedded)),
                base_kind if first_stage else "≤", calls if done else 0, entry["methods"])

    # ---- LMAD: L iterations; iteration 0's generation is the proposals; its auxiliary calls are
    # the same for every chain policy (and for every graph policy)
    lm = config["lmad"]
    L, R, budgets = lm["iterations"], lm["local_rounds"], lm["max_tokens"]
    E, Lo, D, Rs = budgets["extractor"], budgets["localizer"], budgets["debater"], budgets["resolver"]
    aux_iterations = L if lm["guard_last_iteration"] else L - 1
    lmad = [m for m in plan.lmad_methods if not METHODS[m].society]
    for structure in ("chain", "dag"):
        ms = [m for m in lmad if METHODS[m].structure == structure]
        if not ms:
            continue
        for m_index, m in enumerate(ms):
            for it in range(L):
                committed = it * Rs  # P grows by at most one repair an iteration

                def tables(stage: str, it=it, m=m) -> list[str]:
                    return [layout.lmad_table(backbone, d, m, it, stage) for d in plan.datasets]
                if it > 0:
                    add(f"{m} iter {it} generate", N * K, True, S, N * K * (base_total / max(N, 1) + committed), "≤",
                        N * K if _exists(workdir, tables("generate")) else 0, [m])
                if it >= aux_iterations or (it == 0 and m_index > 0):
                    continue  # no auxiliary stage; or iteration 0's, counted with the first policy
                who = ms if it == 0 else [m]
                name = "/".join(who) if it == 0 else m
                q_prompt = base_total / max(N, 1) + committed
                stages = [("extract", K, E, q_prompt + _template(plan, "extractor") + S, "extract")]
                if structure == "chain":
                    stages.append(("localize", 1, Lo, q_prompt + _template(plan, "localizer") + K * E, "localize"))
                stages += [("debate", R * K, D, q_prompt + _template(plan, "debater") + K * (E + D), "debate"),
                           ("resolve", 1, Rs, q_prompt + _template(plan, "resolver") + K * max(D, E), "resolve"),
                           ("relation check", 1, 4, q_prompt + _template(plan, "relation_check") + Rs, "relation")]
                for label, per_q, mt, prompt, stage in stages:
                    done = _exists(workdir, tables(stage))
                    add(f"{name} iter {it} {label}", N * per_q, True, mt, N * per_q * prompt, "≤",
                        N * per_q if done else 0, who)


def _round_calls(plan: Plan, stages, setting, k: int, S: int, aux: dict, t: int) -> list[tuple]:
    """(label, calls per question, max_tokens, embedded reply tokens ≤, prompt role) of each stage
    of one debate round."""
    out = []
    advice = k - 1  # advice items addressed to an agent (peer, notes, self)
    adv_tokens = advice * aux.get("advice", 0) if any(isinstance(s, Advise) for s in stages) else 0
    for s in stages:
        if isinstance(s, Solve):
            out.append(("solve", k, S, 0, "solver"))
        elif isinstance(s, Reason):
            by_manner: dict[str, int] = defaultdict(int)
            for manner in setting.manners:
                by_manner[manner] += 1
            for manner, agents in by_manner.items():
                for j, step in enumerate(MANNERS[manner]):
                    seen = (k * S + adv_tokens if t else 0) + j * S
                    out.append((f"{manner} {step.name}" if step.name != ANSWER else manner, agents, S, seen,
                                step.role))
        elif isinstance(s, Advise):
            seen = {"peer": 2 * S, "notes": k * S, "self": S}[s.mode]
            out.append((f"advice ({s.mode})", k * (k - 1), aux["advice"], seen, s.roles((), False)[0]))
        elif isinstance(s, Revise):
            out.append(("revise", k, S, k * S + adv_tokens, s.role))
        elif isinstance(s, Turn):
            out.append((f"turn {s.agent}", 1, S, k * S, s.role))
        elif isinstance(s, Judge):
            out.append(("judge", 1, aux["judge"], k * S, s.role))
    return out


def _judge_groups(plan: Plan, out: Forecast, counter, stores, workdir: Path) -> None:
    """The judge: at most one call per free-form prediction (rule-scored answer types, empty and
    repeated predictions are not asked); its known-answer battery, exactly when the questions are known."""
    from .answers import FREE_FORM
    from .data import ANSWER_TYPE
    from .data.loaders import dataset_type
    from .judge_battery import build_battery
    from .stages.judge import judge_request, rule_scored

    config, judge = plan.config, plan.judge
    count, store = counter(judge), stores[judge]
    J, S = config["judge"]["max_tokens"], config["solver"]["max_tokens"]
    template = load_prompt(config["prompts"]["judge"])
    tmpl = estimate_tokens(template.system + template.user)
    free_form = {d: ANSWER_TYPE[dataset_type(d, config["datasets"][d])] in FREE_FORM
                 for d in plan.datasets}
    calls = prompt = done = 0
    for backbone in plan.backbones:
        for d in plan.datasets:
            q = out.questions.get((backbone, d))
            if q is None:
                continue
            asked = (sum(not rule_scored(r) for r in q.rows) if q.rows is not None
                     else q.n * free_form[d])
            if not asked:
                continue
            rows = q.rows if q.rows is not None else _demo_rows(d, config["datasets"][d])
            mean_q = (sum(estimate_tokens(r["question"] + r["answer"] + " ".join(r["aliases"])) for r in rows)
                      / len(rows)) if rows else 0
            n = asked * len(plan.methods)
            calls += n
            prompt += n * (tmpl + mean_q + S)
            done += n if _exists(workdir, [layout.judgments(backbone, d)]) else 0
    if calls:
        out.groups.append(Group(judge, "judge", calls, True, J, round(prompt), "≤", done, tuple(plan.methods)))

    # the battery: built from the run's questions (every backbone's datasets, at full n)
    v = config["judge"]["validation"]
    full = [out.questions.get((b, d)) for d in plan.datasets for b in plan.backbones[:1]]
    if full and all(q is not None and q.rows is not None for q in full):
        rows = [r for q in full for r in q.rows if not rule_scored(r)]
        by_id = {(r["dataset"], r["qid"]): r for r in rows}
        items = build_battery(rows, v["questions_per_dataset"], v["kinds"], v["max_aliases"], config["seed"])
        requests = [judge_request(template, by_id[(it.dataset, it.qid)], it.candidate, J) for it in items]
        if requests:
            out.groups.append(Group(judge, "judge validation", len(requests), False, J,
                                    sum(count.request(r) for r in requests), count.kind, store.cached(requests)))
    else:
        per_q = len([k for k in v["kinds"] if k not in ("alias", "opposite_yes_no", "other_gold", "near_miss")]) \
            + v["max_aliases"] * ("alias" in v["kinds"]) + 2
        n = sum(min(config["datasets"][d].get("n") or v["questions_per_dataset"], v["questions_per_dataset"])
                for d in plan.datasets if free_form[d])
        done = n * per_q if _exists(workdir, [plan.judge_validation_file("validation.parquet")]) else 0
        if n:
            out.groups.append(Group(judge, "judge validation", n * per_q, True, J, n * per_q * (tmpl + 40), "est.",
                                    done))


# ------------------------------------------------------------------------------ the report

def _num(n: float) -> str:
    return f"{round(n):,}"


def _calls(n: int, bound: bool) -> str:
    return ("≤ " if bound and n else "") + _num(n)


def _wall(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def _prompt(tokens: int, kinds: set[str]) -> str:
    if not tokens:
        return "0"
    if "≤" in kinds:
        return f"≤ {_num(tokens)}" + (" (est.)" if "est." in kinds else "")
    return _num(tokens) + (" (est.)" if "est." in kinds else "")


def table(rows: list[list[str]], header: list[str]) -> str:
    lines = [header, ["---"] * len(header), *rows]
    return "\n".join("| " + " | ".join(r) + " |" for r in lines)


def report(fc: Forecast, tokens_per_s: dict[str, float], configfiles: list[str], workdir: str,
           by_stage: bool = False) -> str:
    config = fc.config
    lines = [f"# Cost before a run: {' '.join(configfiles)} (workdir {workdir})", ""]
    per_dataset: dict[str, dict[tuple[int, str], list[str]]] = {}
    for (b, d), q in fc.questions.items():
        per_dataset.setdefault(d, {}).setdefault((q.n, q.source), []).append(b)
    parts = []
    for d, counts in per_dataset.items():
        ((n, src), _), *rest = sorted(counts.items(), key=lambda kv: -len(kv[1]))
        parts.append(f"{d} {n}" + "".join(f" ({n2} for {', '.join(bs)})" for (n2, _), bs in rest) + f" [{src}]")
    lines.append("Questions: " + "; ".join(parts))
    lines.append(f"Backbones: {', '.join(config['backbones'])}; judge: {config['judge']['model']}; "
                 f"methods: {', '.join(config['methods'])}")
    lines.append("")
    body = []
    for model, m in fc.by_model().items():
        rate = tokens_per_s.get(model, tokens_per_s.get("*"))
        if rate:
            wall = f"{_wall(m['generated'] / rate)} ({_num(rate)} tok/s, --tokens-per-s)"
        else:
            wall = "no figure: pass --tokens-per-s"
        body.append([model, _calls(m["calls"], m["bound"]), _num(m["cached"]),
                     _calls(m["calls"] - m["cached"], m["bound"]),
                     _prompt(m["prompt_tokens"], m["prompt_kinds"]) + f" [{fc.tokenizers.get(model, '?')}]",
                     _calls(m["generated"], True), wall])
    lines.append(table(body, ["model", "calls", "cached (cost 0)", "to compute", "prompt tokens to compute",
                              "generated tokens to compute", "wall time (generated ÷ tokens/s)"]))
    bounded = [m for m in config["methods"] if METHODS[m].family == "lmad"
               or (METHODS[m].family == "debate" and METHODS[m].protocol.stop != "rounds")]
    bounded += ["the judge"] if any(g.bound and g.stage == "judge" for g in fc.groups) else []
    lines += ["", "What each number means:",
              "- calls: exact where a method always makes the same number of calls; `≤ N` is an upper bound, "
              "reached when no question stops early and no call is skipped. Bounds here come from: "
              + (", ".join(bounded) or "none") + ". Calls two methods send identically are counted once "
              "(the call cache computes them once).",
              "- cached: calls whose request is known before the run (CoT and proposals generation, the judge's "
              "battery) found in the call store by the backend's key, plus the calls of stages whose tables "
              "already exist. They cost nothing.",
              "- prompt tokens: [tokenizer] counted with the model's tokenizer (first-stage prompts rendered "
              "exactly); [chars/4] or (est.) estimated at 4 characters a token; `≤`: later prompts embed "
              "earlier replies, bounded by their max_tokens.",
              "- generated tokens: max_tokens of every call to compute, an upper bound.",
              "- wall time: generated tokens ÷ the model's generated tokens/s from --tokens-per-s (prefill, "
              "queueing and model loading not counted); no figure, no time."]
    if fc.skipped:
        lines += ["", "NOT counted (on in this config, they add calls): " + ", ".join(fc.skipped)]
    if by_stage:
        stages: dict[str, dict] = {}
        for g in fc.groups:  # rounds and iterations together
            row = stages.setdefault(re.sub(r" (round|iter) \d+", "", g.stage), {
                "calls": 0, "bound": False, "cached": 0, "generated": 0, "max_tokens": g.max_tokens, "models": set()})
            row["calls"] += g.calls
            row["bound"] |= g.bound
            row["cached"] += g.cached
            row["generated"] += g.generated
            row["models"].add(g.model)
        lines += ["", "By stage (every model, round and iteration together; a/b: calls methods a and b share):", "",
                  table([[stage, str(len(r["models"])), _calls(r["calls"], r["bound"]), _num(r["cached"]),
                          str(r["max_tokens"]), _calls(r["generated"], True)] for stage, r in stages.items()],
                        ["stage", "models", "calls", "cached", "max_tokens", "generated tokens to compute"])]
    return "\n".join(lines) + "\n"


def parse_rates(items: list[str]) -> dict[str, float]:
    """``MODEL=N`` (or ``N`` for every model) -> generated tokens/s."""
    rates = {}
    for item in items:
        model, sep, value = item.rpartition("=")
        rates[model if sep else "*"] = float(value)
    return rates


def _commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=10).stdout.strip()
    except OSError:
        return ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lmad.forecast", description=__doc__.split("\n\n")[0])
    parser.add_argument("--configfile", nargs="+", default=[str(REPO / "config" / "config.yaml")])
    parser.add_argument("--config", nargs="*", default=[], metavar="KEY=VALUE")
    parser.add_argument("--tokens-per-s", nargs="*", default=[], metavar="[MODEL=]N",
                        help="a model's measured generated tokens per second (N alone: every model)")
    parser.add_argument("--workdir", default=".", help="the run's directory (its results/ and call cache)")
    parser.add_argument("--by-stage", action="store_true", help="also print every call group")
    args = parser.parse_args(argv)
    config = load_config(args.configfile, args.config)
    cwd = os.getcwd()
    try:  # relative paths in the config (prompts, cache_dir) are the run directory's, as in a run
        os.chdir(args.workdir)
        fc = forecast(config, ".")
    finally:
        os.chdir(cwd)
    text = report(fc, parse_rates(args.tokens_per_s), args.configfile, args.workdir, args.by_stage)
    commit = _commit()
    sys.stdout.write(text + (f"\n(lmad at commit {commit}; no model was started)\n" if commit else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
