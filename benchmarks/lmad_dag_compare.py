"""Graph LMAD against chain LMAD on a finished run: no model call, saved tables only.

    PYTHONPATH=workflow python benchmarks/lmad_dag_compare.py --configfile config/lmad-dag-compare.yaml
    PYTHONPATH=workflow python benchmarks/lmad_dag_compare.py --directory <run>   # the demo's run folder

For every backbone and dataset of the config, and each question type (the questions table's
``qtype``: HotpotQA bridge / comparison, 2WikiMultiHopQA's four types, MuSiQue's hop count,
StrategyQA boolean) plus "all", one row per LMAD method of the run (chain vs graph):

* ``n``, ``EM`` (official exact match, %) and ``acc`` (the answer type's own correctness, %);
* ``calls/q``, ``prompt tok/q``, ``gen tok/q`` (every call the method made, the shared proposals
  included, as its predictions count them);
* ``debated`` — questions with at least one localized conflict; ``claims/seg`` — claims debated
  per agent segment (mean over every localized iteration and agent) and ``of chain`` — that as a
  share of the agent's claims; ``graph fb`` — agents' graphs that fell back to the chain;
* the stop reasons (agreement / guard_rejected / budget / resolver_truncated).
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter, defaultdict
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "workflow"))

from lmad import layout  # noqa: E402
from lmad.protocols.localized_debate.controller import LMAD_STOP_REASONS  # noqa: E402
from lmad.registry import METHODS  # noqa: E402
from lmad.schemas import read_table  # noqa: E402

STOPS = {"agreement": "agree", "guard_rejected": "reject", "budget": "budget", "resolver_truncated": "trunc"}


def _mean(xs) -> float | None:
    xs = list(xs)
    return sum(xs) / len(xs) if xs else None


def _fmt(x, digits=2) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def unit_rows(root: Path, backbone: str, dataset: str, method: str) -> list[dict]:
    """One dict per question of one (backbone, dataset, method): type, correctness, cost, segments, stop."""
    def at(path: str) -> Path:
        return root / path

    qs = {r["qid"]: r for r in read_table("questions", at(layout.questions(dataset))).to_dicts()}
    judged = {r["qid"]: r for r in read_table("judgments", at(layout.judgments(backbone, dataset))).to_dicts()
              if r["method"] == method}
    preds = read_table("predictions", at(layout.predictions(backbone, dataset, method))).to_dicts()
    segments: dict[str, list[tuple[int, int]]] = defaultdict(list)
    fallbacks: dict[str, list[bool]] = defaultdict(list)
    for t in read_table("lmad_trace", at(layout.lmad_trace(backbone, dataset, method))).to_dicts():
        if t["conflict"] is None:
            continue
        for seg, chain in zip(t["segments"], t["chains"]):
            segments[t["qid"]].append((len(seg), len(chain)))
        if METHODS[method].structure == "dag":  # a chain method has no graph to fall back from
            fallbacks[t["qid"]] += [bool(f) for f in t["graph_fallbacks"] or []]
    out = []
    for p in preds:
        j = judged.get(p["qid"], {})
        out.append({"qtype": qs[p["qid"]]["qtype"] or "–", "em": j.get("em"), "correct": j.get("correct"),
                    "calls": p["calls"], "prompt": p["prompt_tokens"], "gen": p["completion_tokens"],
                    "stop": p["stop_reason"], "segments": segments.get(p["qid"], []),
                    "fallbacks": fallbacks.get(p["qid"], [])})
    return out


def summary(rows: list[dict]) -> dict:
    segs = [s for r in rows for s in r["segments"]]
    fb = [f for r in rows for f in r["fallbacks"]]
    stops = Counter(r["stop"] for r in rows)
    return {
        "n": len(rows),
        "EM": _mean(100 * r["em"] for r in rows if r["em"] is not None),
        "acc": _mean(100 * r["correct"] for r in rows if r["correct"] is not None),
        "calls/q": _mean(r["calls"] for r in rows), "prompt tok/q": _mean(r["prompt"] for r in rows),
        "gen tok/q": _mean(r["gen"] for r in rows), "debated": sum(bool(r["segments"]) for r in rows),
        "claims/seg": _mean(s for s, _ in segs), "of chain": _mean(s / c for s, c in segs if c),
        "graph fb": f"{sum(fb)}/{len(fb)}" if fb else "–",
        "stops": " ".join(f"{STOPS[s]} {stops[s]}" for s in LMAD_STOP_REASONS if stops[s]),
    }


COLUMNS = ["backbone", "dataset", "qtype", "method", "n", "EM", "acc", "calls/q", "prompt tok/q", "gen tok/q",
           "debated", "claims/seg", "of chain", "graph fb", "stops"]


def table(root: Path, config: dict) -> str:
    methods = [m for m in config["methods"] if METHODS[m].family == "lmad"]
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for backbone in layout.runs(config["backbones"], config.get("seeds")):
        for dataset in config["datasets"]:
            per_method = {m: unit_rows(root, backbone, dataset, m) for m in methods}
            types = sorted({r["qtype"] for rows in per_method.values() for r in rows})
            for qtype in ["all", *(types if len(types) > 1 else [])]:
                for m in methods:
                    rows = [r for r in per_method[m] if qtype == "all" or r["qtype"] == qtype]
                    s = summary(rows)
                    cells = [backbone, dataset, qtype, m, str(s["n"]), _fmt(s["EM"], 1), _fmt(s["acc"], 1),
                             _fmt(s["calls/q"]), _fmt(s["prompt tok/q"], 0), _fmt(s["gen tok/q"], 0),
                             str(s["debated"]), _fmt(s["claims/seg"]), _fmt(s["of chain"]), s["graph fb"], s["stops"]]
                    lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--configfile", default="config/config.yaml", help="the run's config (relative to --directory)")
    ap.add_argument("--directory", default=".", help="the run's working directory (holds results/)")
    args = ap.parse_args(argv)
    root = Path(args.directory)
    config_path = Path(args.configfile)
    config = yaml.safe_load((config_path if config_path.is_absolute() else root / config_path).read_text())
    print(table(root, config), end="")


if __name__ == "__main__":
    main()
