"""The rules' one command (lmad.stage_command): the job line a rule's ``stage_job`` param writes
is what workflow/scripts/stage.py decodes, its params evaluated as Snakemake evaluates the rule's
own, and plain data (the script imports no Snakemake); a bad line or a rule the line cannot
describe fails, naming the rule."""
import base64
import pickle
import subprocess
import sys
import zlib

import pytest
from hypothesis import given, strategies as st
from snakemake.iocontainers import InputFiles, OutputFiles, Wildcards

from conftest import REPO, make_config, snakemake, write_config
from lmad.stage_command import JOB_PARAM, STAGE_COMMAND, JobSpec, attach, decode_job, job_param

plain = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                     lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner)
                     | st.dictionaries(st.text(max_size=5) | st.integers(), inner, max_size=3), max_leaves=12)


@given(params=st.dictionaries(st.text(min_size=1, max_size=8), plain, max_size=4))
def test_a_job_line_decodes_to_the_data_it_was_made_of(params):
    data = {"input": {"q": ["a b.parquet", "c"]}, "output": {"out": "o.parquet"}, "params": params, "wildcards": {"w": "1"}}
    line = format(JobSpec(data), "")
    assert "\n" not in line and "LMAD_JOB" not in line
    job = decode_job("r", ["l.log"], line + "\n")
    assert (job.rule, job.log, job.input, job.output, job.params, job.wildcards) == (
        "r", ["l.log"], data["input"], data["output"], params, {"w": "1"})


@pytest.mark.parametrize("line", ["", "not base64!", base64.b64encode(b"not zlib").decode(),
                                  base64.b64encode(zlib.compress(pickle.dumps([1, 2]))).decode()])
def test_a_bad_line_names_the_rule_and_the_command(line):
    with pytest.raises(SystemExit, match=r"rule judge: no job on stdin .*STAGE_COMMAND"):
        decode_job("judge", [], line)


def files(cls, named: dict, *unnamed: str):
    out = cls([*unnamed, *(f for v in named.values() for f in (v if isinstance(v, list) else [v]))])
    start = len(unnamed)
    for name, value in named.items():
        end = start + (len(value) if isinstance(value, list) else 1)
        out._set_name(name, start, end if isinstance(value, list) else None)
        start = end
    return out


def test_params_are_evaluated_as_snakemake_evaluates_them_and_files_become_plain_data():
    def gen(w):
        yield from (w.a, "x")

    params = [("static", "{a}-{b}"), ("items", ["{a}", 3, {"k": "{b}"}]), ("fn", lambda w: f"{w.a}!"),
              ("gen", gen), ("nested", {"k": "{a}"}), ("number", 0.5)]
    wildcards = Wildcards(fromdict={"a": "1", "b": "two"})
    inputs = files(InputFiles, {"questions": ["q1.parquet", "q2.parquet"], "prompt": "p.txt"}, "unnamed.parquet")
    outputs = files(OutputFiles, {"out": "o.parquet"})
    spec = job_param("r", params)(wildcards, inputs._plainstrings(), outputs._plainstrings())
    job = decode_job("r", [], format(spec, ""))
    assert job.params == {"static": "1-two", "items": ["1", 3, {"k": "{b}"}], "fn": "1!", "gen": ["1", "x"],
                          "nested": {"k": "{a}"}, "number": 0.5}
    assert job.input == {"questions": ["q1.parquet", "q2.parquet"], "prompt": "p.txt"} and job.output == {"out": "o.parquet"}
    assert job.wildcards == {"a": "1", "b": "two"}
    blob = pickle.dumps(spec.data, protocol=4)
    assert b"snakemake" not in blob  # the script unpickles it without importing Snakemake


@pytest.mark.parametrize("params, error", [
    ([("f", lambda w, input: 1)], "param 'f' is a function of more than the wildcards"),
    ([("f", lambda input: 1)], "param 'f' is a function of more than the wildcards"),
    ([("f", lambda: 1)], "param 'f' is a function of more than the wildcards"),
    ([(JOB_PARAM, 1)], f"param {JOB_PARAM!r} is the rule's job line"),
])
def test_a_param_the_line_cannot_carry_faithfully_fails_naming_the_rule(params, error):
    with pytest.raises(ValueError, match=rf"rule r: {error}"):
        job_param("r", params)


class FakeRule:
    def __init__(self, name, shellcmd, params, unnamed=0):
        self.name, self.shellcmd, self._params, self.unnamed, self.added = name, shellcmd, dict(params), unnamed, {}

    @property
    def params(self):
        rule = self

        class Params(list):
            def items(self):
                return rule._params.items()
        return Params([*rule._params.values(), *([None] * rule.unnamed)])

    def set_params(self, **params):
        self.added.update(params)


def test_attach_gives_the_stage_rules_their_line_and_refuses_a_stage_rule_that_runs_another_command():
    stage_rule, other = FakeRule("s", STAGE_COMMAND, {"function": "m:f", "x": 1}), FakeRule("t", "echo", {"y": 2})
    attach([stage_rule, other], "python stage.py")
    assert list(stage_rule.added) == [JOB_PARAM] and not other.added
    spec = stage_rule.added[JOB_PARAM](Wildcards(fromdict={}), InputFiles([]), OutputFiles([]))
    assert (spec.runner, spec.rule, decode_job("s", [], format(spec, "")).params) == (
        "python stage.py", "s", {"function": "m:f", "x": 1})
    with pytest.raises(ValueError, match="rule u names a stage but does not run it"):
        attach([FakeRule("u", "python other.py", {"function": "m:f"})], "python stage.py")
    with pytest.raises(ValueError, match="rule v: every param of a stage rule is named"):
        attach([FakeRule("v", STAGE_COMMAND, {"function": "m:f"}, unnamed=1)], "python stage.py")


def test_the_script_without_a_line_fails_naming_its_rule(tmp_path):
    proc = subprocess.run([sys.executable, str(REPO / "workflow" / "scripts" / "stage.py"), "judge", "j.log"],
                          input="", capture_output=True, text=True, cwd=tmp_path, timeout=60,
                          env={"PYTHONPATH": str(REPO / "workflow"), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 1 and "rule judge: no job on stdin" in proc.stderr


def test_a_rule_runs_its_stage_from_the_line_and_its_params_still_trigger_reruns(workdir):
    """A real run, the warm worker off (each job decodes its own line): the tables are made; the
    line (a function of the files) is not among the params Snakemake stores, so nothing reruns;
    a changed param still reruns its rule."""
    config = make_config(workdir, n=2, warm_worker=False)
    target = "results/scripted/hotpotqa/predictions/cot.parquet"
    snakemake(workdir, target)
    assert (workdir / target).is_file()
    assert "Nothing to be done" in snakemake(workdir, "-n", target).stdout
    write_config(workdir, {**config, "solver": {"max_tokens": 65}})
    out = snakemake(workdir, "-n", target).stdout
    assert "rule generate:" in out and "Params have changed" in out
