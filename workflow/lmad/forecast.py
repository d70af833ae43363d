"""What a config will cost before it runs: per model, the calls and tokens its jobs will compute.

``python -m lmad.forecast --configfile config/paper.yaml [--config k=v ...] [--tokens-per-s MODEL=N ...]
[--workdir DIR] [--by-stage]`` loads and checks the config as rules/common.smk does, asks the run's
:class:`~lmad.plan.Plan` which backbones, datasets, methods, agents, rounds and iterations run,
and counts each model's calls from the protocols (no model is started, nothing is written):

* **calls** are exact where a method always makes the same number (CoT, the proposals, MAD and
  every protocol with the ``rounds`` stop rule, the chair's synthesis, the judge's battery when
  the questions are known) and an upper bound (``≤``) where a question can stop early or a call
  be skipped: Consensus (agreement), dMAD (the judge; the moderator only for undecided ones),
  every LMAD policy (agreement, the guard, a truncated resolver; the relation check only for a
  repair with a claim) and the judge (rule-scored, empty and repeated predictions are not asked).
  Calls two methods send identically (MAD and Consensus revise alike, Chair's rounds are MAD's,
  DMAD and TrueDMAD open alike, every LMAD chain policy's iteration 0) are counted once, as the
  call cache computes them once.
* **cached**: calls whose request is known before the run (``generate`` of CoT and the proposals,
  the judge's known-answer battery) looked up in the call store by the key the backend uses; and
  the calls of stages whose tables already exist (a finished run: they cost nothing unless their
  inputs change). Both cost nothing.
* **prompt tokens**: the first stage's prompts are rendered with the project's prompt code and
  counted with the model's tokenizer where it is available locally (``exact``), else estimated at
  4 characters a token (``est.``); a later call's prompt embeds earlier replies, bounded by their
  ``max_tokens`` (``≤``). **generated tokens**: ``max_tokens`` per call, an upper bound.
* **wall time** = generated tokens to compute ÷ the model's measured generated tokens/s (the
  user's ``--tokens-per-s``; prefill and queueing not counted). No default figure exists.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

from .config_schema import SCHEMA, validate
from .forecast_calls import Forecast, forecast
from .forecast_inputs import REPO
from .registry import METHODS


# ------------------------------------------------------------------------------ the config

def load_config(configfiles: list[str], overrides: list[str] = (), allow_test_double: bool | None = None) -> dict:
    """The config as the Snakefile sees it: the files merged in order, ``--config k=v`` on top
    (values read as YAML, as Snakemake does), the method names, the schema (its defaults filled),
    serve-by-default and the checks of rules/common.smk."""
    import jsonschema
    from snakemake.utils import update_config

    from .config_checks import check_config, check_method_names, schema_error, serve_by_default

    config: dict = {}
    for path in configfiles:
        update_config(config, yaml.safe_load(Path(path).read_text()) or {})
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--config {item!r}: expected KEY=VALUE")
        update_config(config, {key: yaml.safe_load(value)})
    check_method_names(config)
    try:
        validate(config)  # the registries' lists filled in, defaults too, as rules/common.smk
    except jsonschema.ValidationError:
        raise ValueError(schema_error(config, str(SCHEMA)) or "config does not match its schema") from None
    serve_by_default(config)
    if allow_test_double is None:
        allow_test_double = os.environ.get("LMAD_ALLOW_TEST_DOUBLE") == "1"
    check_config(config, allow_test_double=allow_test_double)
    return config


# ------------------------------------------------------------------------------ the report

def _num(n: float) -> str:
    return f"{round(n):,}"


def _calls(n: int, bound: bool) -> str:
    return ("≤ " if bound and n else "") + _num(n)


def _wall(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def _prompt(tokens: int, kinds: set[str]) -> str:
    if not tokens:
        return "0"
    if "≤" in kinds:
        return f"≤ {_num(tokens)}" + (" (est.)" if "est." in kinds else "")
    return _num(tokens) + (" (est.)" if "est." in kinds else "")


def table(rows: list[list[str]], header: list[str]) -> str:
    lines = [header, ["---"] * len(header), *rows]
    return "\n".join("| " + " | ".join(r) + " |" for r in lines)


def report(fc: Forecast, tokens_per_s: dict[str, float], configfiles: list[str], workdir: str,
           by_stage: bool = False) -> str:
    config = fc.config
    lines = [f"# Cost before a run: {' '.join(configfiles)} (workdir {workdir})", ""]
    per_dataset: dict[str, dict[tuple[int, str], list[str]]] = {}
    for (b, d), q in fc.questions.items():
        per_dataset.setdefault(d, {}).setdefault((q.n, q.source), []).append(b)
    parts = []
    for d, counts in per_dataset.items():
        ((n, src), _), *rest = sorted(counts.items(), key=lambda kv: -len(kv[1]))
        parts.append(f"{d} {n}" + "".join(f" ({n2} for {', '.join(bs)})" for (n2, _), bs in rest) + f" [{src}]")
    lines.append("Questions: " + "; ".join(parts))
    lines.append(f"Backbones: {', '.join(config['backbones'])}; judge: {config['judge']['model']}; "
                 f"methods: {', '.join(config['methods'])}")
    lines.append("")
    body = []
    for model, m in fc.by_model().items():
        rate = tokens_per_s.get(model, tokens_per_s.get("*"))
        if rate:
            wall = f"{_wall(m['generated'] / rate)} ({_num(rate)} tok/s, --tokens-per-s)"
        else:
            wall = "no figure: pass --tokens-per-s"
        body.append([model, _calls(m["calls"], m["bound"]), _num(m["cached"]),
                     _calls(m["calls"] - m["cached"], m["bound"]),
                     _prompt(m["prompt_tokens"], m["prompt_kinds"]) + f" [{fc.tokenizers.get(model, '?')}]",
                     _calls(m["generated"], True), wall])
    lines.append(table(body, ["model", "calls", "cached (cost 0)", "to compute", "prompt tokens to compute",
                              "generated tokens to compute", "wall time (generated ÷ tokens/s)"]))
    bounded = [m for m in config["methods"] if METHODS[m].family == "lmad"
               or (METHODS[m].family == "debate" and METHODS[m].protocol.stop != "rounds")]
    bounded += ["the judge"] if any(g.bound and g.stage == "judge" for g in fc.groups) else []
    lines += ["", "What each number means:",
              "- calls: exact where a method always makes the same number of calls; `≤ N` is an upper bound, "
              "reached when no question stops early and no call is skipped. Bounds here come from: "
              + (", ".join(bounded) or "none") + ". Calls two methods send identically are counted once "
              "(the call cache computes them once).",
              "- cached: calls whose request is known before the run (CoT and proposals generation, the judge's "
              "battery) found in the call store by the backend's key, plus the calls of stages whose tables "
              "already exist. They cost nothing.",
              "- prompt tokens: [tokenizer] counted with the model's tokenizer (first-stage prompts rendered "
              "exactly); [chars/4] or (est.) estimated at 4 characters a token; `≤`: later prompts embed "
              "earlier replies, bounded by their max_tokens.",
              "- generated tokens: max_tokens of every call to compute, an upper bound.",
              "- wall time: generated tokens ÷ the model's generated tokens/s from --tokens-per-s (prefill, "
              "queueing and model loading not counted); no figure, no time."]
    if fc.skipped:
        lines += ["", "NOT counted (on in this config, they add calls): " + ", ".join(fc.skipped)]
    if by_stage:
        stages: dict[str, dict] = {}
        for g in fc.groups:  # rounds and iterations together
            row = stages.setdefault(re.sub(r" (round|iter) \d+", "", g.stage), {
                "calls": 0, "bound": False, "cached": 0, "generated": 0, "max_tokens": g.max_tokens, "models": set()})
            row["calls"] += g.calls
            row["bound"] |= g.bound
            row["cached"] += g.cached
            row["generated"] += g.generated
            row["models"].add(g.model)
        lines += ["", "By stage (every model, round and iteration together; a/b: calls methods a and b share):", "",
                  table([[stage, str(len(r["models"])), _calls(r["calls"], r["bound"]), _num(r["cached"]),
                          str(r["max_tokens"]), _calls(r["generated"], True)] for stage, r in stages.items()],
                        ["stage", "models", "calls", "cached", "max_tokens", "generated tokens to compute"])]
    return "\n".join(lines) + "\n"


def parse_rates(items: list[str]) -> dict[str, float]:
    """``MODEL=N`` (or ``N`` for every model) -> generated tokens/s."""
    rates = {}
    for item in items:
        model, sep, value = item.rpartition("=")
        rates[model if sep else "*"] = float(value)
    return rates


def _commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=10).stdout.strip()
    except OSError:
        return ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lmad.forecast", description=__doc__.split("\n\n")[0])
    parser.add_argument("--configfile", nargs="+", default=[str(REPO / "config" / "config.yaml")])
    parser.add_argument("--config", nargs="*", default=[], metavar="KEY=VALUE")
    parser.add_argument("--tokens-per-s", nargs="*", default=[], metavar="[MODEL=]N",
                        help="a model's measured generated tokens per second (N alone: every model)")
    parser.add_argument("--workdir", default=".", help="the run's directory (its results/ and call cache)")
    parser.add_argument("--by-stage", action="store_true", help="also print every call group")
    args = parser.parse_args(argv)
    config = load_config(args.configfile, args.config)
    cwd = os.getcwd()
    try:  # relative paths in the config (prompts, cache_dir) are the run directory's, as in a run
        os.chdir(args.workdir)
        fc = forecast(config, ".")
    finally:
        os.chdir(cwd)
    text = report(fc, parse_rates(args.tokens_per_s), args.configfile, args.workdir, args.by_stage)
    commit = _commit()
    sys.stdout.write(text + (f"\n(lmad at commit {commit}; no model was started)\n" if commit else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
