"""The forecast's call groups (lmad.forecast): per model, the calls each stage of each method
will make, counted from the run's plan and the protocols, with their prompt and generated tokens
and how many are already cached."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from . import layout
from .forecast_inputs import (CallStore, PromptCounter, Questions, demo_rows, estimate_tokens, messages_text,
                              questions_of, tokenizer_of)
from .plan import Plan
from .prompts import load_prompt
from .protocols.debate.spec import ANSWER, MANNERS, Advise, Judge, Reason, Revise, Solve, Turn
from .registry import METHODS
from .solver import derive_seed, solver_request


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


def _exists(workdir: Path, paths: list[str]) -> bool:
    return bool(paths) and all((workdir / p).exists() for p in paths)


def forecast(config: dict, workdir: str | Path = ".") -> Forecast:
    """Every call group of every model of the run ``config`` describes (validated, defaults filled)."""
    workdir = Path(workdir)
    plan = Plan(config)
    out = Forecast(config, skipped=not_forecast(config, plan))
    cache_dir = Path(config["cache_dir"])
    cache_dir = cache_dir if cache_dir.is_absolute() else workdir / cache_dir
    counters: dict[str, PromptCounter] = {}
    stores: dict[str, CallStore] = {}

    def counter(model: str) -> PromptCounter:
        if model not in counters:
            spec = plan.models.spec(model)
            counters[model] = PromptCounter(tokenizer_of(spec, workdir))
            out.tokenizers[model] = "tokenizer" if counters[model].count else "chars/4"
            stores[model] = CallStore(spec, cache_dir)
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


def _base_prompts(plan: Plan, backbone: str, out: Forecast, count: PromptCounter) -> tuple[dict, int, str]:
    """Per dataset, the mean solver prompt of its questions (tokens) and how it was counted; the
    questions' total; the kind (exact where every dataset's rows are known)."""
    solver = load_prompt(plan.config["prompts"]["solver"])
    S = plan.config["solver"]["max_tokens"]
    means, kind = {}, count.kind
    for d in plan.datasets:
        q = out.questions[(backbone, d)]
        rows = q.rows
        if rows is None:
            rows, kind = demo_rows(d, plan.config["datasets"][d]), "est."
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
    temps = plan.models.agent_temperatures(backbone)
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
                        or any(plan.debate.setting(m, backbone).shares_proposals for m in plan.debate_methods))
    for stage, wanted in (("cot", "cot" in plan.methods), ("proposals", proposals_needed)):
        if not wanted:
            continue
        stage_temps = plan.questions.stage_temperatures(stage, temps)
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
        setting = plan.debate.setting(m, backbone)
        proto = METHODS[m].protocol
        k = len(setting.temperatures)
        aux = plan.debate.aux_max_tokens(m)
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
        if proto.final in ("moderator", "chair"):
            # after the last round, also after round 0 alone (chair-none: the drafts go straight to
            # the chair); the chair synthesizes every question (MAD's rounds never stop early), the
            # moderator answers only those the judge left undecided
            t = setting.rounds
            role = "debate_moderator" if proto.final == "moderator" else "chair"
            final = {"moderator": aux.get("moderator"), "chair": aux.get("chair")}[proto.final]
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
                    if stage in layout.LMAD_ITERATION_STAGES:  # one file of every unit: written or not
                        return [layout.lmad_iteration(backbone, it, stage)]
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
            rows = q.rows if q.rows is not None else demo_rows(d, config["datasets"][d])
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
        done = n * per_q if _exists(workdir, [plan.analysis.judge_validation_file("validation.parquet")]) else 0
        if n:
            out.groups.append(Group(judge, "judge validation", n * per_q, True, J, n * per_q * (tmpl + 40), "est.",
                                    done))
