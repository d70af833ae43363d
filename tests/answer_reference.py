"""An independent reference of the typed vote, for tests: count answers by the type's
equivalence (each answer's key is the first earlier non-empty answer it is equivalent to), the
biggest group wins, ties go to the group seen first in agent order, the winner is that group's
first answer; only empty answers give ""."""
from lmad.answers import get


def reference_vote(answers, answer_type, order=None):
    kind = get(answer_type)
    order = list(range(len(answers))) if order is None else list(order)
    reps, counts, first = [], {}, {}
    for i in order:
        a = answers[i] or ""
        if kind.is_empty(a):
            continue
        rep = next((r for r in reps if kind.equivalent(answers[r], a)), None)
        if rep is None:
            reps.append(i)
            rep = i
        counts[rep] = counts.get(rep, 0) + 1
        first.setdefault(rep, len(first))
    if not counts:
        return ""
    best = max(counts.values())
    winner = min((r for r, c in counts.items() if c == best), key=lambda r: first[r])
    return answers[winner]
