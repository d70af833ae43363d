"""Layer B: the blind pushback judge, and the authored battery that validates it.

**What the judge sees.** Only the parent turn and the reply (``pushback_request``): the text of
the responses the reply answers, each under a neutral heading ("Earlier response 1", ...),
and the reply's text. Never the question's gold, the debater's self-report, the tone, a
model name or an agent's identity or label. The parent of agent a's round-t reply is what
the debate showed it: the other agents' round t-1 responses, except that in a protocol of
sequential turns (dMAD) an agent who already spoke in round t is shown by its round-t turn.

**Validation before use.** ``build_battery`` authors, from the run's own questions, replies
whose stance is known without a model: two rebuttals (the reply rejects the parent's answer
for another one) and two endorsements (the reply accepts the parent's answer) per question,
each under a parent that states an answer. The judge passes only if its recall on rebuttals
(stance ``disagree``) AND on endorsements (stance ``agree``) each reach the floor (the
layered-disagreement paper: 80 %), so an always-agree or always-disagree judge fails. The recall arithmetic is the run
judge's (``lmad.judge_battery.summarize``: endorsement = known-correct side, rebuttal =
known-incorrect side, an unparsable reply a miss on both).
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from lmad.backends import ChatRequest
from lmad.disagreement_labels import PUSHBACK_SCHEMA
from lmad.answers import get, type_of
from lmad.answers.choice import LETTERS
from lmad.judge_battery import known_answer, per_dataset_sample, rival_answer, rival_pool, summarize
from lmad.prompts import Prompt
from lmad.protocols.debate.spec import Protocol, Turn

REBUTTALS = ("I disagree. The answer is not {gold}: the passages point to {rival} instead, and nothing in them "
             "supports {gold}.\nAnswer: {rival}",
             "That is wrong. {gold} does not fit the question; reading the passages again, the answer is "
             "{rival}.\nAnswer: {rival}")
ENDORSEMENTS = ("I agree with you. The answer is {gold}; your reasoning matches the passages.\nAnswer: {gold}",
                "You are right, and I accept {gold} as the answer: the passages support it.\nAnswer: {gold}")
PARENT = "Reading the passages step by step, the answer is {gold}.\nAnswer: {gold}"
#: on a question without gold (an opinion) the parent states one of the question's options and the
#: reply rejects it for another or accepts it: the stance is known by construction, and no option
#: is held up as the better answer
OPINION_REBUTTALS = ("I disagree. I would not choose {gold}; weighing the question again, {rival} is the position I "
                     "hold.\nAnswer: {rival_letter}",
                     "That position does not hold up. Instead of {gold}, I choose {rival}.\nAnswer: {rival_letter}")
OPINION_ENDORSEMENTS = ("I agree with you: {gold} is the position I hold as well.\nAnswer: {gold_letter}",
                        "You are right, and I accept {gold} as my answer too.\nAnswer: {gold_letter}")
OPINION_PARENT = "Weighing the question, my position is {gold}.\nAnswer: {gold_letter}"
#: battery kind -> the stance a correct judge gives
EXPECTED = {"rebuttal": "disagree", "endorsement": "agree"}


def parent_text(turns: Mapping[int, str]) -> str:
    """The parent turn as the judge reads it: the responses without any agent identity."""
    if len(turns) == 1:
        return next(iter(turns.values())).strip()
    return "\n\n".join(f"Earlier response {n}:\n{turns[j].strip()}" for n, j in enumerate(sorted(turns), 1))


def pushback_request(prompt: Prompt, parent: str, reply: str, max_tokens: int) -> ChatRequest:
    """The one judge call, for real replies and battery items alike (deterministic, JSON-constrained)."""
    return ChatRequest(messages=prompt.render(parent=parent, reply=reply.strip()), temperature=0.0,
                       max_tokens=max_tokens, seed=0, constraint={"json": PUSHBACK_SCHEMA}, role="pushback")


def turn_order(protocol: Protocol) -> list[int]:
    """The agents that speak in sequence within a revision round (dMAD), in order; [] when all
    agents revise at once."""
    return [s.agent for s in protocol.exchange if isinstance(s, Turn)]


def replies_with_parents(protocol: Protocol, samples: Iterable[dict]) -> list[dict]:
    """Every debate reply of rounds t >= 1 with its parent turn: ``{qid, round, agent, parent,
    reply, own}`` (own: the agent's round t-1 response), in (qid, round, agent) order.
    ``samples``: a method's ``samples`` rows of every round."""
    by = defaultdict(dict)
    for r in samples:
        by[(r["qid"], r["round"])][r["agent"]] = r["response"]
    order = turn_order(protocol)
    out = []
    for (qid, t), turns in sorted(by.items()):
        if t == 0:
            continue
        prev = by.get((qid, t - 1), {})
        for a in sorted(turns):
            before = order[: order.index(a)] if a in order else []
            shown = {j: (turns[j] if j in before and j in turns else prev[j]) for j in prev if j != a}
            if shown:
                out.append({"qid": qid, "round": t, "agent": a, "parent": parent_text(shown), "reply": turns[a],
                            "own": prev.get(a, "")})
    return out


@dataclass(frozen=True)
class BatteryItem:
    dataset: str
    qid: str
    kind: str  # rebuttal | endorsement
    variant: int
    parent: str
    reply: str

    @property
    def expected(self) -> str:
        return EXPECTED[self.kind]


def without_gold(q: Mapping) -> bool:
    """Whether ``q``'s answer type has no gold (an opinion): its battery items state options."""
    return not get(type_of(q)).has_gold


def _option(q: Mapping, letter: str) -> str:
    text = dict(zip(LETTERS, q.get("choices") or ())).get(letter, "").strip()
    return f"option {letter} ({text})" if text else f"option {letter}"


def _opinion_fill(q: Mapping, rng) -> dict | None:
    """Two different options of an opinion question, drawn by ``rng``: the parent's position and
    the rebuttal's (None with fewer than two options)."""
    letters = LETTERS[:len(q.get("choices") or ())]
    if len(letters) < 2:
        return None
    own, other = rng.sample(letters, 2)
    return {"gold": _option(q, own), "gold_letter": own, "rival": _option(q, other), "rival_letter": other}


def build_battery(questions: Iterable[dict], questions_per_dataset: int, seed: int) -> list[BatteryItem]:
    """Seeded: at most ``questions_per_dataset`` questions of each dataset, 2 rebuttals and 2
    endorsements each. A question with gold is drawn only when it has a known answer
    (:func:`lmad.judge_battery.known_answer`, never an empty gold) and a rival; its parent states
    the gold. A question without gold (an opinion, GlobalOpinionQA) states two of its own options
    instead (``OPINION_*``): what a rebuttal or an endorsement is does not depend on which answer
    is better, so the stance is known without one — the judge is validated on reading stance,
    not on judging opinions."""
    questions = sorted((q for q in questions if without_gold(q) or known_answer(q) is not None),
                       key=lambda q: (q["dataset"], q["qid"]))
    pool = rival_pool(questions)
    items = []
    for dataset, rng, chosen in per_dataset_sample(questions, questions_per_dataset, seed, "pushback\0"):
        for q in chosen:
            if without_gold(q):
                fill = _opinion_fill(q, rng)
                parent, replies = OPINION_PARENT, (("rebuttal", OPINION_REBUTTALS), ("endorsement", OPINION_ENDORSEMENTS))
            else:
                rival = rival_answer(q, pool, rng)
                fill = None if rival is None else {"gold": known_answer(q), "rival": rival}
                parent, replies = PARENT, (("rebuttal", REBUTTALS), ("endorsement", ENDORSEMENTS))
            if fill is None:
                continue
            for kind, templates in replies:
                items += [BatteryItem(dataset, q["qid"], kind, v, parent.format(**fill), t.format(**fill))
                          for v, t in enumerate(templates)]
    return items


def battery_note(items: Sequence[BatteryItem], questions: Sequence[Mapping]) -> list[str]:
    """The report's lines on what the battery stands on where a dataset has no gold."""
    types = {(q["dataset"], q["qid"]): without_gold(q) for q in questions}
    opinion = sorted({it.dataset for it in items if types.get((it.dataset, it.qid))})
    none = sorted({q["dataset"] for q in questions if without_gold(q)} - set(opinion))
    out = []
    if opinion:
        out.append(f"On {', '.join(f'`{d}`' for d in opinion)} (no gold answer) each parent states one of the "
                   "question's options and the reply rejects it for another option or accepts it: the stance is "
                   "known by construction and no option is taken as the better answer, so this validates the judge's "
                   "reading of stance, not any judgement of which opinion is better.")
    if none:
        out.append(f"{', '.join(f'`{d}`' for d in none)}: no gold and fewer than two options, so no item: the judge "
                   "is unvalidated there.")
    return out + ([""] if out else [])


def validate(rows: Sequence[dict], min_recall: float) -> dict:
    """Two-sided floor over judged battery rows (``kind``, ``stance``: "" when unparsable)."""
    verdict = {"agree": "correct", "disagree": "incorrect"}
    as_judge = [{"expected": r["kind"] == "endorsement",
                 "judge_verdict": verdict.get(r["stance"], "unscored" if not r["stance"] else "partial")}
                for r in rows]
    s = summarize(as_judge, min_recall)
    reason = (s["reason"].replace("known-correct and on known-incorrect items", "endorsements and on rebuttals")
              .replace("known-correct item", "endorsement").replace("known-incorrect item", "rebuttal")
              .replace("known-correct", "endorsements").replace("known-incorrect", "rebuttals"))
    return {"n_rebuttals": s["n_incorrect_items"], "n_endorsements": s["n_correct_items"],
            "rebuttal_recall": s["tnr"], "endorsement_recall": s["tpr"], "n_unparsed": s["n_unscored"],
            "min_recall": float(min_recall), "passed": s["passed"], "reason": reason}


def validation_line(v: Mapping) -> str:
    def pct(x):
        return f"{100 * x:.1f} %" if x is not None and math.isfinite(x) else "–"

    verdict = "PASSED" if v["passed"] else "FAILED"
    return (f"Pushback judge `{v['judge_model']}` validation {verdict} on {v['n_rebuttals']} authored rebuttals "
            f"and {v['n_endorsements']} endorsements: recall {pct(v['rebuttal_recall'])} on rebuttals, "
            f"{pct(v['endorsement_recall'])} on endorsements (floor {100 * v['min_recall']:.0f} % each), "
            f"{v['n_unparsed']} unparsable — {v['reason']}.")
