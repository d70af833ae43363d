"""Coverage-selected societies (When Debate Helps §4): which K agents of a pool to debate with.

**Pool.** An agent is (temperature, persona, prompt variant) and, for "neural thicket" agents,
a seeded weight perturbation (``backends/perturb.py``; transformers backend, or the test double).
Personas and variants are data here (:data:`PERSONAS`, :data:`VARIANTS`); config
``societies.pool`` picks them. Every pool agent answers every question once with the solver
prompt under its persona (system message) and variant (an instruction before the answer line).

**Splits** (config ``societies.split``; :func:`construction_split`). Per benchmark (a dataset's
``type``, else its name: MMLU-Redux's subject datasets are one benchmark), its questions are ranked
by a seeded hash of (seed, benchmark, dataset, qid); the first ``size`` are the benchmark's
*construction* split, the rest its held-out *evaluation* split. A benchmark's society is selected
on the construction split of ``construct_on[benchmark]`` (default: itself; another benchmark for
the transfer test) and every table with a society column scores every method on the evaluation
split only. A benchmark needs more questions than ``size`` (and than every size of ``sizes``),
so one with a single question is an error. The sweep ``sizes`` selects on each size's first
questions of the same ranking and evaluates every size on the questions past the largest one.

**Selection** (on the construction split only), each picking ``k`` agents:

``ac_greedy``  labeled answer coverage: cov[a, q] = agent a's answer is correct (vs gold + aliases, by
               the question's answer type: official EM for spans, equivalence otherwise)
``sc_greedy``  label-free support coverage: valid (non-empty) answers of all pool agents on q are
               clustered by the answer type's equivalence (normalized form for spans);
               support[a, q] = (size of a's cluster − 1) / (valid − 1);
               cov[a, q] = support ≥ ``sc_min_support`` (a's answer is shared by enough of the pool,
               not necessarily the plurality)
``top_k``      the k individually most accurate agents (labels)
``default``    the pipeline's default personas: persona ``plain``, variant ``standard``, no perturbation,
               at ``agents.temperatures`` (its size is theirs, not k)

Greedy: at each step the agent with the largest marginal coverage |cov[a] \\ covered| (questions
counted once when any selected agent covers them — a cardinality-constrained maximum coverage),
ties broken by its total score (accuracy / support) and then by pool index. Greedy is exact when
each step's best marginal gain is unique to the optimum's agents (e.g. disjoint coverage sets) and
a (1 − 1/e) approximation in general.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Sequence

from .answers import Gold, gold_correct, group_keys, majority_vote
from .prompts import Prompt

#: persona name -> system message (None: the solver prompt's own)
PERSONAS: dict[str, str | None] = {
    "plain": None,
    # $quote_source / $evidence: the question's own (lmad.prompts.question_fields), "passage(s)" for multi-hop
    "skeptic": "You are a skeptical fact-checker. You accept only what a $quote_source states outright and you "
               "check every hop of the reasoning against the $evidence before you answer.",
    # the two below are multi-hop reading strategies: on other task families they are off topic
    "bridge": "You answer multi-hop questions by first naming the bridge entity that connects the passages, "
              "then following it to the answer.",
    "concise": "You answer multi-hop questions with the shortest span the passages support, copying names "
               "exactly as the passages write them.",
}
#: prompt variant name -> instruction inserted before the answer line ("" = the solver prompt as is)
VARIANTS: dict[str, str] = {
    "standard": "",
    "verify": "Before the last line, check that every fact you used is stated in one of the $evidence.",
}
SELECTORS = ("ac_greedy", "sc_greedy", "top_k", "default")
LABELS = {"ac_greedy": "AC-Greedy", "sc_greedy": "SC-Greedy", "top_k": "Top-K (accuracy)", "default": "Default personas"}

# ----------------------------------------------------------------------------- naming
# A debating method with a selected society is a method of its own (like a tone, lmad.tones):
# ``mad+ac-greedy`` is MAD whose agents are AC-Greedy's members, with its own results folder,
# column and label. The suffix is the selector with hyphens (method names' own style); "+" is
# not a tone's "@", so the two never parse as each other.
SOCIETY_SEPARATOR = "+"


def society_suffix(selector: str) -> str:
    """The method-name suffix of a selector: ``ac_greedy`` -> ``ac-greedy``."""
    if selector not in SELECTORS:
        raise ValueError(f"unknown society selector {selector!r}; known: {list(SELECTORS)}")
    return selector.replace("_", "-")


def with_society(name: str, selector: str | None) -> str:
    """The method name of ``name`` run with the society ``selector`` picked (None: ``name``)."""
    return name if selector is None else f"{name}{SOCIETY_SEPARATOR}{society_suffix(selector)}"


def split_society(name: str) -> tuple[str, str | None]:
    """(method, selector) of a method name: ``mad+ac-greedy`` -> (``mad``, ``ac_greedy``);
    (``mad``, None) for a method without a society. An unknown suffix raises, naming the known ones."""
    base, sep, suffix = name.partition(SOCIETY_SEPARATOR)
    if not sep:
        return name, None
    selector = suffix.replace("-", "_")
    if selector not in SELECTORS or "_" in suffix:
        raise ValueError(f"method {name!r}: unknown society {suffix!r}; known: "
                         f"{[society_suffix(s) for s in SELECTORS]}")
    return base, selector



@dataclass(frozen=True)
class PoolAgent:
    index: int
    temperature: float
    persona: str
    variant: str
    perturb_seed: int | None = None
    perturb_scale: float = 0.0
    model: str | None = None  # a committee member's model (lmad.committees); None: the job's own

    @property
    def name(self) -> str:
        base = f"t{self.temperature:g}-{self.persona}-{self.variant}"
        base += f"-w{self.perturb_seed}x{self.perturb_scale:g}" if self.perturb_seed is not None else ""
        return base + (f"@{self.model}" if self.model else "")

    @property
    def perturb(self) -> dict | None:
        return None if self.perturb_seed is None else {"seed": self.perturb_seed, "scale": self.perturb_scale}


def pool_agents(temperatures: Sequence[float], personas: Sequence[str], variants: Sequence[str],
                perturbations: Sequence[dict] = ()) -> list[PoolAgent]:
    """Every temperature × persona × variant, then each perturbation at every temperature with the
    plain persona and standard variant (the neural-thicket agents)."""
    for p in personas:
        if p not in PERSONAS:
            raise ValueError(f"unknown persona {p!r}; known: {sorted(PERSONAS)}")
    for v in variants:
        if v not in VARIANTS:
            raise ValueError(f"unknown prompt variant {v!r}; known: {sorted(VARIANTS)}")
    specs = [(float(t), p, v, None, 0.0) for t in temperatures for p in personas for v in variants]
    specs += [(float(t), "plain", "standard", int(w["seed"]), float(w["scale"])) for w in perturbations
              for t in temperatures]
    return [PoolAgent(i, *s) for i, s in enumerate(specs)]


def agent_prompt(solver: Prompt, agent: PoolAgent) -> Prompt:
    """The solver prompt under an agent's persona and variant."""
    system = PERSONAS[agent.persona] or solver.system
    extra = VARIANTS[agent.variant]
    user = solver.user.replace("$answer_line", f"{extra} $answer_line") if extra else solver.user
    return Prompt(path=f"{solver.path}#{agent.persona}/{agent.variant}", system=system, user=user,
                  answer_lines=solver.answer_lines)


def held_out_note(methods: Sequence[str], size: int | None = None) -> str:
    """A table's caption line on its questions when it has a method with a society (none
    otherwise): every method is scored on the held-out evaluation split; ``size``: the
    construction split's questions per benchmark (config ``societies.split.size``)."""
    named = [m for m in methods if split_society(m)[1] is not None]
    if not named:
        return ""
    size_text = f"the first {size} questions of each benchmark's seeded ranking" if size is not None else \
        "each benchmark's construction split"
    return (f"\nHeld out: every method is scored on the evaluation split only, the questions left after the "
            f"construction split ({size_text}; config societies.split.size) that the societies of "
            f"{', '.join(named)} were selected on (docs/methods.md \"Coverage-selected societies\").\n")


def member_prompt(prompt: Prompt, role: str, agent: PoolAgent) -> Prompt:
    """An agent's own version of a debate prompt (role: a config ``prompts`` key).

    ``solver`` (round 0): exactly the pool's prompt (:func:`agent_prompt`), so with the pool's
    seed a member's opening repeats the answer it was selected on (a cache hit). Any other role:
    the persona goes before the template's system message (which carries the turn's
    instructions, so it is not replaced) and the variant's instruction before ``$answer_line``,
    or at the end of the user message when the template writes its answer line out; a template
    that asks for no answer (advice, a critique, a Step-Back concept) gets the persona only."""
    if role == "solver":
        return agent_prompt(prompt, agent)
    persona, extra = PERSONAS[agent.persona], VARIANTS[agent.variant]
    if persona is None and not extra:
        return prompt
    system = f"{persona}\n\n{prompt.system}" if persona and prompt.system else (persona or prompt.system)
    user = prompt.user
    if extra and "$answer_line" in user:
        user = user.replace("$answer_line", f"{extra} $answer_line")
    elif extra and "Answer:" in user:
        user = f"{user}\n\n{extra}"
    return Prompt(path=f"{prompt.path}#{agent.persona}/{agent.variant}", system=system, user=user,
                  answer_lines=prompt.answer_lines)


def members_of(rows: Sequence[dict], selector: str, n: int | None = None, dataset: str | None = None
               ) -> list[PoolAgent]:
    """The society ``selector`` picked (``society_members`` rows) as pool agents in pick order;
    its first ``n`` when given (a protocol with a fixed agent count: dMAD's two sides).
    ``dataset``: the dataset whose society it is (each benchmark has its own); without it the
    rows must name one society (a single dataset, or the same members for every dataset)."""
    picked = [r for r in rows if r["selector"] == selector]
    if dataset is not None:
        picked = [r for r in picked if r.get("dataset") in (None, dataset)]
        if not picked:
            raise ValueError(f"society {selector}: no members for dataset {dataset!r}")
    else:
        societies = {tuple(r["agent"] for r in sorted((x for x in picked if x.get("dataset") == d),
                                                      key=lambda r: r["rank"]))
                     for d in {r.get("dataset") for r in picked}}
        if len(societies) > 1:
            raise ValueError(f"society {selector}: the society file holds one society per benchmark; "
                             "the caller must name the question's dataset")
        first = next((r.get("dataset") for r in picked), None)
        picked = [r for r in picked if r.get("dataset") == first]
    picked = sorted(picked, key=lambda r: r["rank"])
    agents = [PoolAgent(r["agent"], float(r["temperature"]), r["persona"], r["variant"], r["perturb_seed"],
                        float(r["perturb_scale"] or 0.0)) for r in picked]
    if n is not None:
        if len(agents) < n:
            raise ValueError(f"society {selector}: {len(agents)} members, the method needs {n}")
        agents = agents[:n]
    return agents


def size_key(selector: str) -> str:
    """The config key that sets a society's size (for errors)."""
    return "agents.temperatures / societies.pool (default personas)" if selector == "default" else "societies.k"


def configured_size(method: str, selector: str, config: dict) -> int:
    """How many members ``selector``'s society has under the workflow ``config``; fails, naming
    the key, while societies are off (``method``: the method that asks, for the error)."""
    societies = config.get("societies") or {}
    if not societies.get("enabled"):
        raise ValueError(f"config methods: {method!r} debates with the {selector} society, but societies.enabled "
                         "is false (no society is selected)")
    return society_size(selector, societies, config["agents"]["temperatures"])


def society_size(selector: str, societies: dict, persona_temperatures: Sequence[float]) -> int:
    """How many members ``selector`` picks under config ``societies`` (known before the pool runs):
    k for the selectors (at most the pool), the matching plain agents for ``default``."""
    pool = societies.get("pool") or {}
    agents = pool_agents(pool.get("temperatures", ()), pool.get("personas", ()), pool.get("variants", ()),
                         pool.get("perturbations") or ())
    if selector == "default":
        return sum(a.persona == "plain" and a.variant == "standard" and a.perturb_seed is None
                   and a.temperature in persona_temperatures for a in agents)
    return min(int(societies.get("k", 3)), len(agents))


CONSTRUCTION, EVALUATION = "construction", "evaluation"


def transfer_only(construct_on: dict[str, str]) -> set[str]:
    """The benchmarks whose society comes from another benchmark and that construct none themselves."""
    return set(construct_on) - set(construct_on.values())


def construction_split(seed: int, keys: Sequence[tuple[str, str, str]], size: int,
                       sizes: Sequence[int] = (), construct_on: dict[str, str] | None = None) -> list[dict]:
    """One row per (benchmark, dataset, qid) of ``keys``: its ``rank`` in its benchmark's seeded
    ranking and its ``split``: ``construction`` for the first ``size``, ``evaluation`` for the
    rest; a benchmark that only receives a society from another (``construct_on``, the transfer
    test) has no construction split: all its questions are held out. Fails, naming config
    ``societies.split.size`` (or ``.sizes``), when a benchmark that constructs has no question
    left for the evaluation split (so such a benchmark of one question always fails), and names
    ``societies.split.construct_on`` for a benchmark the run does not have."""
    by: dict[str, list[tuple[str, str]]] = {}
    for b, d, q in keys:
        by.setdefault(b, []).append((d, q))
    construct_on = construct_on or {}
    for name in [*construct_on, *construct_on.values()]:
        if name not in by:
            raise ValueError(f"config societies.split.construct_on: {name!r} is not a benchmark of the run; "
                             f"its benchmarks: {sorted(by)}")
    receives = transfer_only(construct_on)
    rows = []
    for b, qs in sorted(by.items()):
        cut = 0 if b in receives else size
        if cut:
            check_split_size(b, len(qs), size, sizes)
        rank = sorted(qs, key=lambda k, b=b: hashlib.sha256(f"{seed}\x00{b}\x00{k[0]}\x00{k[1]}".encode()).hexdigest())
        rows += [{"benchmark": b, "dataset": d, "qid": q, "rank": i,
                  "split": CONSTRUCTION if i < cut else EVALUATION} for i, (d, q) in enumerate(rank)]
    return rows


def check_split_size(benchmark: str, n: int, size: int, sizes: Sequence[int] = ()) -> None:
    """A construction split of ``size`` (and each of ``sizes``) must leave a held-out question."""
    for key, value in (("size", size), *(("sizes", s) for s in sizes)):
        if value >= n:
            raise ValueError(f"config societies.split.{key}: {value} construction questions, but benchmark "
                             f"{benchmark!r} has {n}; the construction split must leave at least one held-out "
                             "question per benchmark (lower the size or give the benchmark more questions)")


def sweep_sizes(split_config: dict) -> list[int]:
    """The construction sizes of the sweep (config ``societies.split.sizes``), sorted, without repeats."""
    return sorted(set(int(s) for s in split_config.get("sizes") or ()))


# ----------------------------------------------------------------------------- coverage

def answer_coverage(answers: Sequence[Sequence[str]], golds: Sequence[Gold]) -> list[list[float]]:
    """cov[a][q] = 1.0 when agent a's answer to question q is correct. ``answers[a][q]``; ``golds[q]``
    the question's ``answers.Gold``."""
    return [[float(gold_correct(x, g)) for x, g in zip(row, golds, strict=True)] for row in answers]


def support_scores(answers: Sequence[Sequence[str]], answer_types: Sequence[str]) -> list[list[float]]:
    """support[a][q] = (size of a's answer cluster − 1) / (valid answers − 1); 0 for an empty answer
    or when fewer than 2 agents gave a valid answer. No labels. ``answer_types[q]`` clusters
    question q's answers by its type's equivalence."""
    agents, questions = len(answers), len(answers[0]) if answers else 0
    out = [[0.0] * questions for _ in range(agents)]
    for q in range(questions):
        keys = group_keys([answers[a][q] for a in range(agents)], answer_types[q])
        valid = [k for k in keys if k]
        if len(valid) < 2:
            continue
        for a, k in enumerate(keys):
            if k:
                out[a][q] = (valid.count(k) - 1) / (len(valid) - 1)
    return out


def greedy(scores: Sequence[Sequence[float]], k: int, threshold: float = 0.5) -> list[tuple[int, int]]:
    """Greedy maximum coverage: [(agent, marginal questions covered)] in pick order. A question is
    covered by agent a when scores[a][q] ≥ threshold; ties by total score, then lower index."""
    covers = [{q for q, s in enumerate(row) if s >= threshold} for row in scores]
    totals = [sum(row) for row in scores]
    covered: set[int] = set()
    picked: list[tuple[int, int]] = []
    left = list(range(len(scores)))
    for _ in range(min(k, len(scores))):
        best = max(left, key=lambda a: (len(covers[a] - covered), totals[a], -a))
        picked.append((best, len(covers[best] - covered)))
        covered |= covers[best]
        left.remove(best)
    return picked


def top_k(scores: Sequence[Sequence[float]], k: int) -> list[int]:
    totals = [sum(row) for row in scores]
    return sorted(range(len(scores)), key=lambda a: (-totals[a], a))[:k]


def coverage(scores: Sequence[Sequence[float]], members: Sequence[int], threshold: float = 0.5) -> int:
    """Questions covered by at least one member."""
    n = len(scores[0]) if scores else 0
    return sum(any(scores[a][q] >= threshold for a in members) for q in range(n))


def evaluate(answers: Sequence[Sequence[str]], golds: Sequence[Gold], members: Sequence[int]) -> dict:
    """A society on a question set (``golds[q]``: the question's ``Gold``; see :func:`society_scores`)."""
    types = [g.answer_type for g in golds]
    return society_scores(answers, answer_coverage(answers, golds), members, types)


def society_scores(answers: Sequence[Sequence[str]], correct: Sequence[Sequence[float]], members: Sequence[int],
                   answer_types: Sequence[str]) -> dict:
    """A society on a question set, from each agent's correctness ``correct[a][q]``: proposal hit
    (some member right), its majority vote (members in selection order, ties to the first; grouped
    by ``answer_types[q]``; right when the member whose answer it returns is), mean
    member accuracy — percentages."""
    n = len(correct[0]) if correct else 0
    if n == 0 or not members:
        return {"n": n, "hit": None, "vote": None, "member_acc": None}
    hit = vote = right = 0
    for q in range(n):
        kind = answer_types[q]
        said = [answers[a][q] or "" for a in members]
        ok = [bool(correct[a][q]) for a in members]
        hit += any(ok)
        right += sum(ok)
        winner = majority_vote(said, kind)[1]["winner_norm"]
        # the vote returns the answer of the winning group's first member: right iff that member is
        vote += bool(winner) and ok[group_keys(said, kind).index(winner)]
    return {"n": n, "hit": 100 * hit / n, "vote": 100 * vote / n, "member_acc": 100 * right / (n * len(members))}
