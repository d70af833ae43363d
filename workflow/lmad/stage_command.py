"""The rules' one command, and the job it hands to workflow/scripts/stage.py.

Every rule that runs a stage has ``shell: STAGE_COMMAND``: the script, given the rule's name and
log files as arguments, reads the job's named inputs, outputs, params and wildcards as one line
on its stdin (a here-document: no limit on its length, unlike an argument). Snakemake's ``script:`` directive
hands over the same data, but as a pickled Snakemake object whose unpickling imports Snakemake:
~0.09 s of each job's process, and a run's LMAD chain is fifty jobs one after another. The line
is plain data, so the script imports only lmad.smk before the warm worker takes the job.

The line is the rule's ``stage_job`` param (``attach``): a param function of the input and output
files, which Snakemake therefore neither stores nor compares (its rerun triggers see the rule's
other params, as before). It evaluates those other params as Snakemake does: a function of the
wildcards called with them, a string or a list's strings with the wildcards filled in.
"""
from __future__ import annotations

import base64
import pickle
import types
import zlib
from types import SimpleNamespace
from typing import Any, Callable

from .worker_client import hand_over

JOB_PARAM = "stage_job"
# the interpreter and script (``runner``) and the rule's name come from the line's param too, filled
# in at each job: the command Snakemake compares for its code trigger stays the same wherever the
# checkout or the interpreter is, and names nothing from outside the rule (snakemake --lint)
STAGE_COMMAND = ("{params.%(p)s.runner} {params.%(p)s.rule} {log:q} <<'LMAD_JOB'\n{params.%(p)s}\nLMAD_JOB"
                 % {"p": JOB_PARAM})
_DERIVED_ARGS = {"input", "output", "threads", "resources"}


class JobSpec:
    """A job's data, written into its command as one line: pickled (the types a stage receives
    stay what Snakemake's script directive passed: tuples, int keys), compressed (a paper run's
    table jobs name ~1,700 files), base64 (no character the shell or the here-document reads)."""

    __slots__ = ("data", "runner", "rule")

    def __init__(self, data: dict[str, Any], runner: str = "", rule: str = ""):
        self.data, self.runner, self.rule = data, runner, rule

    def __format__(self, spec: str) -> str:
        return base64.b64encode(zlib.compress(pickle.dumps(self.data, protocol=4), 1)).decode("ascii")


def decode_job(rule: str, logs: list[str], line: str) -> SimpleNamespace:
    """The job ``STAGE_COMMAND`` hands to the script: rule, log files, and the line's input,
    output, params and wildcards (mappings by name), as lmad.smk.build_job reads them."""
    try:
        data = pickle.loads(zlib.decompress(base64.b64decode(line.strip(), validate=True)))
        if not (isinstance(data, dict) and {"input", "output", "params", "wildcards"} <= set(data)):
            raise ValueError("not a job")
    except Exception as err:
        raise SystemExit(f"rule {rule}: no job on stdin ({type(err).__name__}: {err}); "
                         f"workflow/scripts/stage.py runs as the rules' command, lmad.stage_command.STAGE_COMMAND")
    return SimpleNamespace(rule=rule, log=list(logs), **data)


def _wildcards_only(value: Callable) -> bool:
    import inspect  # the Snakefile's process only: the job's script never imports it

    try:
        names = list(inspect.signature(value).parameters)
    except (TypeError, ValueError):
        return False
    return len(names) == 1 and names[0] not in _DERIVED_ARGS


def job_param(rule: str, params: list[tuple[str, Any]], runner: str = "") -> Callable:
    """Rule ``rule``'s ``stage_job`` param, its other params being ``params`` ((name, definition)
    pairs, as the rule declares them), its command's interpreter and script ``runner`` (shell
    words). A function among the params must take the wildcards alone: what a stage receives is
    what Snakemake would pass it."""
    from snakemake.io import apply_wildcards  # the Snakefile's process only

    from .smk import _named

    for name, value in params:
        if name == JOB_PARAM:
            raise ValueError(f"rule {rule}: param {JOB_PARAM!r} is the rule's job line; rename the param")
        if callable(value) and not _wildcards_only(value):
            raise ValueError(f"rule {rule}: param {name!r} is a function of more than the wildcards; "
                             f"a stage rule's param functions take the wildcards alone")

    def value_of(value: Any, wildcards: dict[str, str]) -> Any:
        if callable(value):
            value = value(wildcards)
            return list(value) if isinstance(value, types.GeneratorType) else value
        if isinstance(value, str):
            return apply_wildcards(value, wildcards)
        if isinstance(value, list):
            return [apply_wildcards(v, wildcards) if isinstance(v, str) else v for v in value]
        return value

    def stage_job(wildcards, input, output) -> JobSpec:
        named = dict(wildcards.items())
        return JobSpec({"input": _named(input), "output": _named(output), "wildcards": named,
                        "params": {name: value_of(value, wildcards if callable(value) else named)
                                   for name, value in params}}, runner, rule)
    return stage_job


def attach(rules, runner: str, command: str = STAGE_COMMAND) -> None:
    """Give each rule whose command is ``command`` its ``stage_job`` param, ``runner`` its
    interpreter and script (after every rule is defined: the param reads the rule's others). A rule
    that names a stage (``**stage(...)``) and runs another command fails."""
    from .smk import FUNCTION

    for rule in rules:
        params = list(rule.params.items())
        if rule.shellcmd == command:
            if len(params) != len(rule.params):
                raise ValueError(f"rule {rule.name}: every param of a stage rule is named")
            rule.set_params(**{JOB_PARAM: job_param(rule.name, params, runner)})
        elif any(name == FUNCTION for name, _ in params):
            raise ValueError(f"rule {rule.name} names a stage but does not run it: give it `shell: STAGE`")


def run_line(rule: str, logs: list[str], line: str) -> None:
    """What a rule's command runs (lmad.stage_command): its job line in a child of the warm
    worker, or, where none takes it (none runs, or it refused: another interpreter or checkout, a
    job that loads a model), here."""
    status = hand_over(rule, logs, line)
    if status is None:
        from .heap import settle
        from .job import execute
        from .smk import build_job

        job = build_job(decode_job(rule, logs, line))
        settle()  # as the worker's children run (lmad.heap)
        execute(job)
    elif status:
        raise SystemExit(status)
