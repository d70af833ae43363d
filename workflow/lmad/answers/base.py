"""The answer-type interface and its registry.

An answer type owns everything that reads or compares answers of its questions: the answer
line a prompt ends with, extraction from a reply, the canonical form, equivalence, the empty
test, vote grouping, agreement and scoring. Nothing here has a default type: a caller names
the type (or passes a question's :class:`lmad.answers.Reading`), and an unknown or missing
type is an error, never "span".
"""
from __future__ import annotations

from typing import Callable, ClassVar, Sequence

#: name -> the registered type, in registration order (the config schema's enum)
TYPES: dict[str, "AnswerType"] = {}


def register(cls: type["AnswerType"]) -> type["AnswerType"]:
    """Class decorator: one instance of ``cls`` becomes the type named ``cls.name``."""
    if cls.name in TYPES:
        raise ValueError(f"answer type {cls.name!r} registered twice")
    TYPES[cls.name] = cls()
    return cls


def get(name) -> "AnswerType":
    """The registered type ``name``; a missing or unknown name raises ``ValueError``."""
    if not name:
        raise ValueError("no answer type given: every question names its answer type (questions.answer_type)")
    try:
        return TYPES[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown answer type {name!r}; expected one of {', '.join(TYPES)}") from None


def agent_order(n: int, order_key: Sequence | Callable[[int], object] | None = None) -> list[int]:
    """Indices 0..n-1 in agent order: by index, or by ``(order_key, index)``."""
    if order_key is None:
        return list(range(n))
    if callable(order_key):
        keys = [(order_key(i), i) for i in range(n)]
    else:
        if len(order_key) != n:
            raise ValueError("order_key must have one key per answer")
        keys = [(order_key[i], i) for i in range(n)]
    return sorted(range(n), key=lambda i: keys[i])


def tally(answers: Sequence[str], order: Sequence[int], keys: Sequence[str]) -> tuple[str, dict]:
    """The vote's count and result, given each answer's group key ("" for no answer) and the
    agent order: the biggest non-empty group wins, ties go to the group whose first member comes
    first, and the winner's first member's original string is returned."""
    votes: dict[str, int] = {}
    for i in order:
        votes[keys[i]] = votes.get(keys[i], 0) + 1
    nonempty = {k: v for k, v in votes.items() if k}
    if not nonempty:
        return "", {"votes": votes, "tie": False, "winner_norm": "", "strict_majority": False}
    top = max(nonempty.values())
    tied = [k for k, v in nonempty.items() if v == top]  # already in agent order
    winner = tied[0]
    rep = next(i for i in order if keys[i] == winner)
    return answers[rep], {"votes": votes, "tie": len(tied) > 1, "winner_norm": winner,
                          "strict_majority": top * 2 > len(answers)}


def _gold_strings(golds) -> list[str]:
    if isinstance(golds, str):
        return [golds]
    try:
        return [g for g in golds if isinstance(g, str)]
    except TypeError:
        return []


class AnswerType:
    """One answer type. Subclasses set ``name`` and override :meth:`instruction`,
    :meth:`extract` and :meth:`canonical`; the rest follows from those unless the type says
    more (math's symbolic equivalence, opinion's missing gold, the free-form official scores)."""

    name: ClassVar[str] = ""
    #: scored by the benchmark's official EM/F1 and, when validated, the LLM judge
    free_form: ClassVar[bool] = False
    #: has a gold answer to be right or wrong against
    has_gold: ClassVar[bool] = True

    def instruction(self, n_choices: int = 0) -> str:
        """The default answer-format line a prompt ends with (a paper's prompt set may override it)."""
        raise NotImplementedError

    def extract(self, text, choices: Sequence[str] = (), yes_no: bool = False, n_choices: int = 0) -> tuple[str, str]:
        """(answer, the form it was found in) of a reply; never raises on the text."""
        raise NotImplementedError

    def canonical(self, answer) -> str:
        """The answer's grouping key; "" exactly when it gives no answer. Idempotent."""
        raise NotImplementedError

    # ------------------------------------------------------------- derived from canonical

    def equivalent_keys(self, a: str, b: str) -> bool:
        """Whether two canonical forms are one answer (empty ones never are)."""
        return bool(a) and a == b

    def equivalent(self, a, b) -> bool:
        """Whether two answers are the same answer of this type (symmetric; an empty answer
        is equivalent to nothing)."""
        return self.equivalent_keys(self.canonical(a or ""), self.canonical(b or ""))

    def is_empty(self, answer) -> bool:
        """Whether an answer gives nothing to vote for or score."""
        return not self.canonical(answer or "")

    def same(self, a, b) -> bool:
        """Whether two answers say the same: equal canonical forms (two empty answers
        included, unlike :meth:`equivalent`), else equivalent."""
        ca, cb = self.canonical(a or ""), self.canonical(b or "")
        return ca == cb or self.equivalent_keys(ca, cb)

    def group_keys(self, answers: Sequence[str], order: Sequence[int] | None = None) -> list[str]:
        """Each answer's vote group: in ``order`` (agent order) an answer joins the first
        group whose representative it is equivalent to, else opens one keyed by its canonical
        form ("" for an empty answer)."""
        norms = [self.canonical(a or "") for a in answers]
        group = [""] * len(answers)
        reps: list[str] = []
        for i in (range(len(answers)) if order is None else order):
            if norms[i]:
                group[i] = next((r for r in reps if self.equivalent_keys(r, norms[i])), "")
                if not group[i]:
                    group[i] = norms[i]
                    reps.append(norms[i])
        return group

    def vote(self, answers: Sequence[str], order_key=None) -> tuple[str, dict]:
        """Majority over the answers grouped by equivalence; ties go to the group whose first
        member comes first in agent order (index, or ``(order_key, index)``); the winner is its
        first member's original string; only empty answers give "". ``info``: ``votes``
        ({group key: count}, empty included), ``tie``, ``winner_norm``, ``strict_majority``."""
        order = agent_order(len(answers), order_key)
        return tally(answers, order, self.group_keys(answers, order))

    def agree(self, answers: Sequence[str]) -> bool:
        """At least one answer, none empty, and every one equivalent to the first."""
        norms = [self.canonical(a or "") for a in answers]
        return bool(norms) and all(norms) and all(self.equivalent_keys(norms[0], c) for c in norms[1:])

    def is_correct(self, pred, golds, rules: str = "hotpotqa") -> bool | None:
        """Whether a prediction is right: equivalent to any gold (None: the type has no gold)."""
        return any(self.equivalent(pred, g) for g in _gold_strings(golds))

    def score(self, pred, golds, rules: str = "hotpotqa") -> tuple[float | None, float | None]:
        """(EM, F1) as the tables report them: the rule's decision twice (None: no gold)."""
        correct = self.is_correct(pred if isinstance(pred, str) else "", golds, rules)
        return (None, None) if correct is None else (float(correct), float(correct))

    def mentions(self, text: str, gold: str, choices: Sequence[str] = ()) -> bool:
        """Whether ``text`` (a repair's words) states the gold answer; False unless a type can tell."""
        return False

    def __repr__(self) -> str:
        return f"<answer type {self.name}>"
