"""Layer D of the disagreement layers: the stance in a debater's own next-token distribution.

For a debater ``a`` whose round-0 answer is X (the run's shared proposals) and a peer ``b``
whose round-0 answer differs, three probe requests end in the same fixed proposition, "The
answer to the question is X.", and a seven-letter Likert elicitation (A = strongly disagree
… G = strongly agree):

``prior``    no argument;
``treat``    b's round-0 response in context ("Another participant wrote: …");
``control``  neutral filler of the same word count in the same frame (FILLER).

Nothing is sampled: the backend returns the log-probabilities of the seven letters as the
reply's first token (``Backend.next_token_logprobs``). A read whose letters hold less than
``min_mass`` of the probability is degenerate (the model would not answer with a letter) and
is excluded and counted; otherwise the letters are renormalized to a distribution and read
as its expected stance E (1..7) and its margin |E − 4| (how far from neutral).

The opponent's pole is "disagree" (the proposition is a's own answer), so the signed shift
toward it is ``shift = E(control) − E(treat)`` (> 0: the argument moved a towards b), and
``margin_loss = margin(control) − margin(treat)`` (> 0: the argument weakened a's stance
whichever way it points). Filler and argument share frame and length, so context growth,
length and format cancel in the paired difference.
"""
from __future__ import annotations

import math
from typing import Sequence

from lmad.answers import key_of, same_answer, type_of
from lmad.backend_registry import BACKENDS, names, runs_as
from lmad.backends import ChatRequest

LETTERS = ("A", "B", "C", "D", "E", "F", "G")
SCALE = ("strongly disagree", "disagree", "somewhat disagree", "neither agree nor disagree", "somewhat agree",
         "agree", "strongly agree")
CONDITIONS = ("prior", "treat", "control")
#: neutral, answer-free text; cut or repeated to the argument's word count
FILLER = ("The room was quiet and the lights were on. A clock on the wall showed the time. Someone "
          "closed a window and sat down again. The table held a few sheets of paper and a pen. ")
MIDPOINT = 4.0


def probe_backends() -> tuple[str, ...]:
    """The backends whose ``next_token_logprobs`` reads the model (lmad.backend_registry ``logprobs``)."""
    return names(logprobs=True)


def unprobeable(name: str, spec: dict) -> str | None:
    """Why backbone ``name`` (its config ``models`` entry ``spec``) cannot be probed, or None. A
    served model's jobs are its server's clients (``runs_as``), which give no log-probabilities."""
    if runs_as(spec).logprobs:
        return None
    served = ", served" if spec.get("serve") else ""
    embedded = [f"{n} embedded, not served" for n in probe_backends() if BACKENDS[n].served_by]
    return (f"backbone {name} ({spec['backend']}{served}) exposes no next-token log-probabilities; layer D needs "
            f"{', '.join(probe_backends())}" + (f" ({'; '.join(embedded)})" if embedded else ""))


def filler(words: int) -> str:
    base = FILLER.split()
    return " ".join(base[i % len(base)] for i in range(max(words, 1)))


def probe_request(question: str, answer: str, said: str | None) -> ChatRequest:
    """The probe for one condition: ``said`` is the argument (treat), filler (control) or None (prior)."""
    frame = "" if said is None else f"Another participant wrote:\n{said}\n\n"
    options = "\n".join(f"{letter}. {text}" for letter, text in zip(LETTERS, SCALE))
    user = (f"Question: {question}\n\n{frame}Proposition: The answer to the question is {answer}.\n\n"
            f"How much do you agree with the proposition?\n{options}\nReply with one letter.")
    return ChatRequest(messages=(("system", "You rate propositions on a seven-point scale."), ("user", user)),
                       temperature=0.0, max_tokens=1, seed=0, role="probe")


def cells(question: dict, proposals: Sequence[dict]) -> list[dict]:
    """The probe cells of one question: each agent with a non-empty round-0 answer against the
    first other agent (by index) whose non-empty answer differs by the question's answer type
    (normalized form for spans; 1/2 and 0.5, (B) and B are one answer), with that agent's
    response as the argument and the three requests (``CONDITIONS`` order)."""
    by_agent = sorted(proposals, key=lambda r: r["agent"])
    kind = type_of(question)
    out = []
    for own in by_agent:
        if not key_of(own["answer"], question):
            continue
        rival = next((r for r in by_agent if r["agent"] != own["agent"] and key_of(r["answer"], question)
                      and not same_answer(r["answer"], own["answer"], kind)), None)
        if rival is None:
            continue
        argument = rival["response"] or ""
        said = {"prior": None, "treat": argument, "control": filler(len(argument.split()))}
        out.append({"qid": question["qid"], "agent": own["agent"], "opponent": rival["agent"],
                    "proposition": own["answer"], "argument_words": len(argument.split()),
                    "requests": [probe_request(question["question"], own["answer"], said[c]) for c in CONDITIONS]})
    return out


def read(logprobs: Sequence[float] | None, min_mass: float) -> dict:
    """One read: the seven letters' mass, the renormalized distribution, expected stance and
    margin; ``degenerate`` (mass below ``min_mass``, or no finite read) leaves them None.
    Never raises."""
    try:
        probs = [math.exp(float(lp)) for lp in logprobs or ()]
    except (TypeError, ValueError, OverflowError):
        probs = []
    if len(probs) != len(LETTERS) or not all(math.isfinite(p) for p in probs):
        return {"mass": None, "dist": None, "expected": None, "margin": None, "degenerate": True}
    mass = sum(probs)
    if not mass >= min_mass or mass <= 0:
        return {"mass": mass, "dist": None, "expected": None, "margin": None, "degenerate": True}
    dist = [p / mass for p in probs]
    expected = sum((i + 1) * p for i, p in enumerate(dist))
    return {"mass": mass, "dist": dist, "expected": expected, "margin": abs(expected - MIDPOINT), "degenerate": False}


def paired(rows: Sequence[dict]) -> list[dict]:
    """Per cell (dataset, qid, agent) with all three reads valid: shift and margin loss."""
    by_cell: dict[tuple, dict] = {}
    for r in rows:
        by_cell.setdefault((r["dataset"], r["qid"], r["agent"]), {})[r["condition"]] = r
    out = []
    for key, reads in sorted(by_cell.items()):
        if set(reads) != set(CONDITIONS) or any(reads[c]["degenerate"] for c in CONDITIONS):
            continue
        out.append({"dataset": key[0], "qid": key[1], "agent": key[2],
                    "prior": reads["prior"]["expected"], "treat": reads["treat"]["expected"],
                    "control": reads["control"]["expected"],
                    "shift": reads["control"]["expected"] - reads["treat"]["expected"],
                    "margin_loss": reads["control"]["margin"] - reads["treat"]["margin"]})
    return out
