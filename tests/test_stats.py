import time

import numpy as np
import pytest

from lmad.stats import macro_average, paired_bootstrap_diff


def _rand(seed, sizes, p=0.5):
    rng = np.random.default_rng(seed)
    return {k: (rng.random(n) < p).astype(float) for k, n in sizes.items()}


def test_macro_average():
    assert macro_average({"a": 0.2, "b": 0.4, "c": 0.9}) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        macro_average({})


def test_identical_inputs_zero_ci():
    a = _rand(1, {"hotpot": 300, "musique": 200})
    r = paired_bootstrap_diff(a, {k: v.copy() for k, v in a.items()}, n_resamples=2000)
    assert r["diff"] == 0.0 and r["lo"] == 0.0 and r["hi"] == 0.0
    assert r["n_resamples"] == 2000 and r["seed"] == 0


def test_large_difference_excludes_zero():
    sizes = {"d1": 200, "d2": 200}
    a = _rand(2, sizes, p=0.8)
    b = _rand(3, sizes, p=0.3)
    r = paired_bootstrap_diff(a, b, n_resamples=2000, seed=5)
    assert r["lo"] > 0
    assert r["lo"] <= r["diff"] <= r["hi"]
    assert 0.35 < r["diff"] < 0.65


def test_no_difference_ci_contains_zero():
    sizes = {"d1": 400}
    a = _rand(4, sizes, p=0.5)
    b = {"d1": np.roll(a["d1"], 1)}  # same accuracy, different questions
    r = paired_bootstrap_diff(a, b, n_resamples=2000)
    assert r["diff"] == pytest.approx(0.0)
    assert r["lo"] < 0 < r["hi"]


def test_seeded_reproducible_and_seed_matters():
    a = _rand(5, {"x": 150, "y": 90})
    b = _rand(6, {"x": 150, "y": 90})
    r1 = paired_bootstrap_diff(a, b, n_resamples=3000, seed=11)
    r2 = paired_bootstrap_diff(a, b, n_resamples=3000, seed=11)
    assert r1 == r2
    # dict insertion order does not matter
    r3 = paired_bootstrap_diff(dict(reversed(list(a.items()))), dict(reversed(list(b.items()))),
                               n_resamples=3000, seed=11)
    assert r3 == r1
    r4 = paired_bootstrap_diff(a, b, n_resamples=3000, seed=12)
    assert (r4["lo"], r4["hi"]) != (r1["lo"], r1["hi"])
    assert r4["diff"] == r1["diff"]


def test_unscored_answers_are_left_out_per_system():
    a = {"d": np.array([1, 1, np.nan, 0, 1], dtype=float)}
    b = {"d": np.array([0, 1, 1, np.nan, 0], dtype=float)}
    # each system's accuracy over its own scored answers (what Table 1 shows): 3/4 − 2/4
    r = paired_bootstrap_diff(a, b, n_resamples=500)
    assert r["diff"] == pytest.approx(0.25)
    assert r["n"] == {"d": 5}
    assert -1 <= r["lo"] <= r["diff"] <= r["hi"] <= 1


def test_dataset_unscored_for_one_system_raises():
    with pytest.raises(ValueError, match="no question scored for system A"):
        paired_bootstrap_diff({"d": np.array([np.nan, np.nan])}, {"d": np.array([1.0, np.nan])})


def test_macro_is_equal_weight_across_dataset_sizes():
    # big dataset: diff 0 over 1000 questions; small: diff 1 over 10 questions
    a = {"big": np.ones(1000), "small": np.ones(10)}
    b = {"big": np.ones(1000), "small": np.zeros(10)}
    r = paired_bootstrap_diff(a, b, n_resamples=500)
    assert r["diff"] == pytest.approx(0.5)  # micro average would be 10/1010
    # both datasets are constant in their diff -> CI degenerate at 0.5
    assert r["lo"] == pytest.approx(0.5) and r["hi"] == pytest.approx(0.5)


def test_single_dataset_plain_paired_bootstrap():
    rng = np.random.default_rng(0)
    a = (rng.random(300) < 0.6).astype(float)
    b = (rng.random(300) < 0.5).astype(float)
    r = paired_bootstrap_diff({"only": a}, {"only": b}, n_resamples=4000, seed=3)
    assert r["diff"] == pytest.approx(a.mean() - b.mean())
    # percentile interval width ~ 2*1.96*sd(d)/sqrt(n)
    d = a - b
    se = d.std(ddof=1) / np.sqrt(d.size)
    assert (r["hi"] - r["lo"]) == pytest.approx(2 * 1.96 * se, rel=0.15)


def test_alpha_widens_interval():
    a = _rand(7, {"d": 300})
    b = _rand(8, {"d": 300})
    narrow = paired_bootstrap_diff(a, b, n_resamples=3000, alpha=0.2)
    wide = paired_bootstrap_diff(a, b, n_resamples=3000, alpha=0.01)
    assert wide["lo"] <= narrow["lo"] and wide["hi"] >= narrow["hi"]


def test_input_validation():
    with pytest.raises(ValueError):
        paired_bootstrap_diff({"d": np.ones(3)}, {"d": np.ones(4)})
    with pytest.raises(ValueError):
        paired_bootstrap_diff({"d": np.ones(3)}, {"e": np.ones(3)})
    with pytest.raises(ValueError):
        paired_bootstrap_diff({}, {})


def test_speed_10k_resamples_4x500():
    sizes = {f"d{i}": 500 for i in range(4)}
    a, b = _rand(9, sizes), _rand(10, sizes)
    t = time.perf_counter()
    r = paired_bootstrap_diff(a, b, n_resamples=10000)
    assert time.perf_counter() - t < 3.0  # typically ~0.3 s
    assert r["n_resamples"] == 10000
