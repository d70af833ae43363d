"""The LMAD controller: per-question state, transitions and stop reasons (paper §3.2-3.3).

The state of a question entering iteration ℓ is (active, committed state P). After the
iteration's generation the controller decides, in this order:

``agreement``       all answers agree by the question's answer type (``Reading.agree``) → stop with
                    that answer. Checked before node extraction: the answers come from
                    the solver samples, never from the extractor, so extracting the
                    chains of an agreeing iteration would cost K calls and decide nothing.
``resolver_truncated``  the resolver's reply hit its token budget (finish reason
                    ``length``): there is no repair to judge, so the guard decides nothing
                    → stop with the majority vote. Kept apart from ``guard_rejected`` (a
                    cut-off reply is not a rejected repair; Table 2's subset excludes it).
``guard_rejected``  the commit guard rejects the proposed repair → stop with the
                    typed majority vote over the current answers (tie: lowest agent).
admitted            P ← P ‖ Ẑ and the question enters iteration ℓ + 1 — unless ℓ is the
                    last iteration (L - 1):
``budget``          the iteration budget is exhausted → stop with the majority vote over
                    the current answers.

By default the last iteration still localizes, debates and guards a disagreement, as in
the paper: its guard decision is recorded (the strict-rejection subset of the commit
ablation, Table 2), although at ℓ = L − 1 every outcome ends in the same majority vote.
With ``lmad.guard_last_iteration: false`` the last iteration stops after generation: a
disagreement there ends with ``budget`` and no auxiliary call.
Questions that stopped earlier pass through every later iteration untouched.
"""
from __future__ import annotations

from ...answers import Reading
from .commit_guard import GuardResult

AGREEMENT, GUARD_REJECTED, BUDGET = "agreement", "guard_rejected", "budget"
RESOLVER_TRUNCATED = "resolver_truncated"
LMAD_STOP_REASONS = (AGREEMENT, RESOLVER_TRUNCATED, GUARD_REJECTED, BUDGET)


def skips_auxiliary(iteration: int, iterations: int, guard_last_iteration: bool) -> bool:
    """Whether iteration ``iteration`` stops after generation (no extraction onwards)."""
    return not guard_last_iteration and iteration >= iterations - 1


def needs_repair(answers: list[str], reading: Reading) -> bool:
    """Whether an active question goes on to extraction, localization and debate."""
    return not reading.agree(answers)


def initial_state(qids: list[str]) -> list[dict]:
    """Every question active with an empty committed state (entering iteration 0)."""
    return [{"qid": q, "active": True, "committed": [], "stop_reason": None, "stop_iteration": None,
             "prediction": None, "prediction_norm": None} for q in qids]


def _stop(state: dict, reason: str, iteration: int, answer: str, committed: list[str], reading: Reading) -> dict:
    return state | {"active": False, "committed": committed, "stop_reason": reason, "stop_iteration": iteration,
                    "prediction": answer, "prediction_norm": reading.key(answer)}


def transition(state: dict, answers: list[str], guard: GuardResult | None, repair_nodes: list[str],
               iteration: int, iterations: int, reading: Reading, truncated: bool = False,
               skipped: bool = False) -> tuple[dict, str | None]:
    """The state after iteration ``iteration`` of an active question, and its stop reason
    (None when it continues). ``answers`` are in agent order; ``guard`` is None exactly
    when the answers agree (no repair reached the gate) or the iteration ``skipped`` its
    auxiliary stages; ``truncated``: the resolver's reply was cut off; ``reading``: how the
    question's answers are read and compared (``answers.reading_of``): agreement, vote, key."""
    vote, _ = reading.vote(answers)
    if not needs_repair(answers, reading):
        return _stop(state, AGREEMENT, iteration, vote, state["committed"], reading), AGREEMENT
    if skipped:
        return _stop(state, BUDGET, iteration, vote, state["committed"], reading), BUDGET
    if truncated:
        return _stop(state, RESOLVER_TRUNCATED, iteration, vote, state["committed"], reading), RESOLVER_TRUNCATED
    if guard is None:
        raise ValueError(f"question {state['qid']}: answers disagree at iteration {iteration} but no repair "
                         "reached the commit guard")
    if not guard.admitted:
        return _stop(state, GUARD_REJECTED, iteration, vote, state["committed"], reading), GUARD_REJECTED
    committed = [*state["committed"], *repair_nodes]
    if iteration >= iterations - 1:
        return _stop(state, BUDGET, iteration, vote, committed, reading), BUDGET
    return state | {"committed": committed}, None
