"""Paired bootstrap confidence intervals for macro-averaged accuracy differences.

Full precision everywhere; rounding for display happens in the reporting code.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

__all__ = ["macro_average", "paired_bootstrap_diff"]

# Upper bound on the number of index entries drawn at once (memory ~ 8 bytes each).
_MAX_CHUNK_ELEMS = 4_000_000


def macro_average(values: Mapping[str, float]) -> float:
    """Unweighted mean over datasets (each dataset counts once)."""
    if not values:
        raise ValueError("macro_average of no datasets")
    return float(np.mean([float(v) for v in values.values()]))


def _paired_diffs(name: str, a, b) -> np.ndarray:
    a = np.asarray(a, dtype=float).ravel()
    b = np.asarray(b, dtype=float).ravel()
    if a.shape != b.shape:
        raise ValueError(f"dataset {name!r}: arrays differ in length ({a.size} vs {b.size})")
    keep = ~(np.isnan(a) | np.isnan(b))
    d = a[keep] - b[keep]
    if d.size == 0:
        raise ValueError(f"dataset {name!r}: no question scored by both systems")
    return d


def paired_bootstrap_diff(
    correct_a: Mapping[str, np.ndarray],
    correct_b: Mapping[str, np.ndarray],
    n_resamples: int = 10000,
    seed: int = 0,
    alpha: float = 0.05,
) -> dict:
    """Paired bootstrap CI for the macro-averaged difference ``A − B``.

    ``correct_a[ds]`` and ``correct_b[ds]`` are per-question scores (0/1, or
    any real score) aligned by question.  Pairs where either side is NaN
    (unscored) are dropped.  The statistic is the macro average over datasets
    of ``mean_a − mean_b`` (each dataset weighted equally regardless of size).

    Each resample draws questions with replacement *within* each dataset,
    independently per dataset, keeping the A/B pairing, and recomputes the
    statistic.  The CI is the percentile interval
    ``[alpha/2, 1 − alpha/2]``.  Datasets are processed in sorted-name order
    with one ``np.random.default_rng(seed)``, so the result does not depend
    on dict insertion order.  With one dataset this is the plain paired
    bootstrap.

    Returns ``{"diff", "lo", "hi", "n_resamples", "seed", "alpha", "n"}``
    where ``n`` maps each dataset to its number of paired questions.
    """
    if set(correct_a) != set(correct_b):
        raise ValueError("correct_a and correct_b must cover the same datasets")
    if not correct_a:
        raise ValueError("no datasets")
    if n_resamples < 1:
        raise ValueError("n_resamples must be >= 1")
    if not 0 < alpha < 1:
        raise ValueError("alpha must be in (0, 1)")

    names = sorted(correct_a)
    diffs = {ds: _paired_diffs(ds, correct_a[ds], correct_b[ds]) for ds in names}
    point = macro_average({ds: d.mean() for ds, d in diffs.items()})

    rng = np.random.default_rng(seed)
    boot = np.zeros(n_resamples)
    for ds in names:
        d = diffs[ds]
        n = d.size
        rows = max(1, _MAX_CHUNK_ELEMS // n)
        for start in range(0, n_resamples, rows):
            stop = min(start + rows, n_resamples)
            idx = rng.integers(0, n, size=(stop - start, n))
            boot[start:stop] += d[idx].mean(axis=1)
    boot /= len(names)

    lo, hi = np.percentile(boot, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return {
        "diff": float(point),
        "lo": float(lo),
        "hi": float(hi),
        "n_resamples": int(n_resamples),
        "seed": seed,
        "alpha": float(alpha),
        "n": {ds: int(diffs[ds].size) for ds in names},
    }
