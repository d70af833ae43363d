"""Confidence intervals: Wilson score interval of one accuracy, paired bootstrap of a
macro-averaged accuracy difference.

Every interval contains its point estimate and stays within the range of the statistic
(a proportion in [0, 1]; a difference in [-1, 1] for 0/1 scores), also at 0 % and 100 %,
where closed-form arithmetic would otherwise land a few ulp off. Full precision everywhere;
rounding for display happens in the reporting code.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

__all__ = ["macro_average", "paired_bootstrap_diff", "wilson_interval"]

# Upper bound on the number of index entries drawn at once (memory ~ 8 bytes each).
_MAX_CHUNK_ELEMS = 4_000_000


def macro_average(values: Mapping[str, float]) -> float:
    """Unweighted mean over datasets (each dataset counts once). ``fsum`` rounds the sum
    once, so the result does not depend on the order the datasets come in (a polars
    ``group_by`` yields them in any order): the same run twice writes the same digits."""
    if not values:
        raise ValueError("macro_average of no datasets")
    return math.fsum(float(v) for v in values.values()) / len(values)


def mean_sd(values: Sequence[float]) -> tuple[float | None, float | None]:
    """Mean and sample standard deviation (n − 1) of replicate values: the TrueMAD paper's
    "mean ± sample SD over seeds". None for a mean of nothing and for the SD of one value
    (one replicate has no spread to estimate)."""
    xs = [float(v) for v in values]
    if not xs:
        return None, None
    mean = math.fsum(xs) / len(xs)
    if len(xs) == 1:
        return mean, None
    return mean, math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (len(xs) - 1))


def mean_interval(values: Sequence[float]) -> tuple[float, float, float]:
    """Mean and its normal-approximation 95 % interval; NaN where undefined (no value; one value
    has no spread to estimate)."""
    n = len(values)
    if not n:
        return math.nan, math.nan, math.nan
    m = math.fsum(values) / n
    if n == 1:
        return m, math.nan, math.nan
    half = 1.959964 * math.sqrt(math.fsum((v - m) ** 2 for v in values) / (n - 1)) / math.sqrt(n)
    return m, m - half, m + half


def wilson_interval(k: float, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval (95 % by default) of ``k`` successes in ``n`` trials.

    Bounds lie in [0, 1] and contain ``k / n``: exactly 0 at ``k = 0`` and exactly 1 at
    ``k = n`` (the closed form gives e.g. 0.9999999999999999 for 4 of 4). NaN when ``n = 0``."""
    if n <= 0:
        return (math.nan, math.nan)
    if not 0 <= k <= n:
        raise ValueError(f"wilson_interval: k={k} successes out of n={n}")
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    lo = 0.0 if k == 0 else min(max(centre - half, 0.0), p)
    hi = 1.0 if k == n else max(min(centre + half, 1.0), p)
    return lo, hi


def _aligned(name: str, a, b) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(a, dtype=float).ravel()
    b = np.asarray(b, dtype=float).ravel()
    if a.shape != b.shape:
        raise ValueError(f"dataset {name!r}: arrays differ in length ({a.size} vs {b.size})")
    for side, x in (("A", a), ("B", b)):
        if np.isnan(x).all():
            raise ValueError(f"dataset {name!r}: no question scored for system {side}")
    return a, b


def _resampled_means(x: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Mean of the scored (non-NaN) entries of each resample; NaN where none is scored."""
    scored = ~np.isnan(x)
    total, count = np.where(scored, x, 0.0)[idx].sum(axis=1), scored[idx].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return total / count


def paired_bootstrap_diff(
    correct_a: Mapping[str, np.ndarray],
    correct_b: Mapping[str, np.ndarray],
    n_resamples: int = 10000,
    seed: int = 0,
    alpha: float = 0.05,
) -> dict:
    """Paired bootstrap CI for the macro-averaged difference ``A − B``.

    ``correct_a[ds]`` and ``correct_b[ds]`` are per-question scores (0/1, or
    any real score) aligned by question; NaN = unscored.  The statistic is the
    macro average over datasets of ``mean_a − mean_b``, each mean over that
    system's scored questions (the accuracies a table shows; each dataset
    weighted equally regardless of size).  A dataset where one system scored
    nothing has no statistic: ``ValueError``.

    Each resample draws questions with replacement *within* each dataset,
    independently per dataset, keeping the A/B pairing, and recomputes the
    statistic; a resample in which one side drew only unscored questions is
    left out.  The CI is the percentile interval ``[alpha/2, 1 − alpha/2]``,
    widened where needed to contain the point estimate (which only happens with
    a handful of resamples).  Datasets are processed in sorted-name order with
    one ``np.random.default_rng(seed)``, so the result does not depend on dict
    insertion order.  With one dataset this is the plain paired bootstrap.

    Returns ``{"diff", "lo", "hi", "n_resamples", "seed", "alpha", "n"}``
    where ``n`` maps each dataset to its number of questions.
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
    pairs = {ds: _aligned(ds, correct_a[ds], correct_b[ds]) for ds in names}
    point = float(macro_average({ds: np.nanmean(a) - np.nanmean(b) for ds, (a, b) in pairs.items()}))

    rng = np.random.default_rng(seed)
    boot = np.zeros(n_resamples)
    for ds in names:
        a, b = pairs[ds]
        n = a.size
        complete = not (np.isnan(a).any() or np.isnan(b).any())
        d = a - b
        rows = max(1, _MAX_CHUNK_ELEMS // n)
        for start in range(0, n_resamples, rows):
            stop = min(start + rows, n_resamples)
            idx = rng.integers(0, n, size=(stop - start, n))
            boot[start:stop] += (d[idx].mean(axis=1) if complete
                                 else _resampled_means(a, idx) - _resampled_means(b, idx))
    boot /= len(names)

    boot = boot[np.isfinite(boot)]
    lo, hi = (np.percentile(boot, [100 * alpha / 2, 100 * (1 - alpha / 2)]) if boot.size else (point, point))
    return {
        "diff": point,
        "lo": min(float(lo), point),
        "hi": max(float(hi), point),
        "n_resamples": int(n_resamples),
        "seed": seed,
        "alpha": float(alpha),
        "n": {ds: int(a.size) for ds, (a, _) in pairs.items()},
    }
