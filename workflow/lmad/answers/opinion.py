"""Opinion answers (GlobalOpinionQA): the letter of one option, and no gold.

Read, compared and voted like a multiple-choice letter; never right or wrong (``is_correct``
is None). Scored by the similarity of the agents' answer distribution to each surveyed
country's (:func:`opinion_similarity`).
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

from .base import register
from .choice import LETTERS, ChoiceType, canonical_choice


@register
class OpinionType(ChoiceType):
    name = "opinion"
    has_gold = False

    def is_correct(self, pred, golds, rules: str = "hotpotqa") -> bool | None:
        return None

    def mentions(self, text: str, gold: str, choices: Sequence[str] = ()) -> bool:
        return False


def _probabilities(p: Sequence[float]) -> list[float]:
    try:
        values = [float(x) for x in p]
    except (TypeError, ValueError) as e:
        raise ValueError(f"not a probability vector: {p!r}") from e
    total = sum(values)
    if not values or any(not math.isfinite(x) or x < 0 for x in values) or not total > 0:
        raise ValueError(f"not a probability vector: {p!r}")
    return [x / total for x in values]


def jensen_shannon(p: Sequence[float], q: Sequence[float]) -> float:
    """Jensen–Shannon *distance* between two distributions (base 2, in [0, 1]): the square
    root of the JS divergence, as ``scipy.spatial.distance.jensenshannon(p, q, base=2)``.

    Inputs are normalized to sum 1; vectors of different lengths, negative, non-finite or
    all-zero entries raise ``ValueError`` (they are data errors, not model text)."""
    p, q = _probabilities(p), _probabilities(q)
    if len(p) != len(q):
        raise ValueError(f"distributions of different lengths: {len(p)} and {len(q)}")

    def kl_to_mid(x: list[float], y: list[float]) -> float:
        # KL(x || (x+y)/2), written so that no (sub-normal) midpoint can divide by zero
        return sum(xi * math.log2(2 * xi / (xi + yi)) for xi, yi in zip(x, y) if xi > 0)

    return min(1.0, math.sqrt(max(0.0, (kl_to_mid(p, q) + kl_to_mid(q, p)) / 2)))


def answer_distribution(letters: Sequence[str], n_options: int) -> list[float] | None:
    """The share of each option A.. among the answers; empty answers and letters beyond
    ``n_options`` are dropped.  None when no answer is a valid letter (the caller reports it)."""
    try:
        n = int(n_options)
    except (TypeError, ValueError, OverflowError):
        return None
    if n <= 0 or n > 26:
        return None
    counts = [0] * n
    for a in letters or ():
        x = canonical_choice(a) if isinstance(a, str) else ""
        if len(x) == 1 and x in LETTERS[:n]:
            counts[LETTERS.index(x)] += 1
    total = sum(counts)
    return [c / total for c in counts] if total else None


def opinion_similarity(letters: Sequence[str], survey: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """Per country, ``1 − Jensen–Shannon distance`` (base 2) between the agents' answer
    distribution and the country's survey distribution.

    This is GlobalOpinionQA's published similarity metric (Durmus et al. 2023, "Towards
    Measuring the Representation of Subjective Global Opinions in Language Models":
    similarity = 1 − Jensen–Shannon distance); the layered-disagreement study reports the same
    quantity as mean Jensen–Shannon *distances* (0.120 / 0.116).  The distance, not the
    divergence, is used.  Each country's vector sets its number of options; countries whose
    vector is no probability vector are skipped; empty when no answer is a valid letter."""
    out: dict[str, float] = {}
    for country, dist in (survey or {}).items():
        try:
            target = _probabilities(dist)
        except ValueError:
            continue
        model = answer_distribution(letters, len(target))
        if model is not None:
            out[country] = 1.0 - jensen_shannon(model, target)
    return out
