"""Every rule that runs library code names its stage function once, ``params: **stage("module:function")``
(lmad.smk.stage), and runs the one script workflow/scripts/stage.py (``shell: STAGE``); the name
brings the hash of the code that makes its artifact (lmad.smk.code_hash: the stage's module and every lmad module it
imports), so editing that code reruns the rule (params are a rerun trigger; the command never changes)."""
import importlib
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import REPO
from lmad import studies

STAGE = re.compile(r'^\s*\*\*stage\("([\w.]+:\w+)"\),$', re.M)
# the one command (lmad.stage_command.STAGE_COMMAND), which runs workflow/scripts/stage.py
COMMAND = re.compile(r"^\s*shell:\n\s*STAGE$", re.M)


def _rules():
    """(file, rule name, body text) of every rule in rules/*.smk and the studies' rules.smk."""
    for path in sorted((REPO / "rules").glob("*.smk")) + [Path(studies.rules_file(n)) for n in studies.STUDIES]:
        current = None
        for line in path.read_text().splitlines():
            start = re.match(r"^(\s*)(?:rule|checkpoint) (\w+):", line)
            if start:
                if current:
                    yield current
                current = [path, start.group(2), len(start.group(1)), []]
            elif current is not None:
                if line.strip() and len(line) - len(line.lstrip()) <= current[2]:
                    yield current
                    current = None
                else:
                    current[3].append(line)
        if current:
            yield current


# The target rules: they run no code.
TARGETS = {"all", "paper"}


def stages() -> dict[str, str]:
    """rule name: the stage function its params name."""
    out = {}
    for file, name, _, body in _rules():
        text = "\n".join(body)
        if name in TARGETS:
            assert "script:" not in text and not STAGE.search(text), f"{file}:{name}"
            continue
        named = STAGE.findall(text)
        assert len(named) == 1 and "code_hash(" not in text, f"{file}:{name}: name its stage once, **stage(...)"
        assert COMMAND.search(text) and "script:" not in text, f"{file}:{name}: runs its stage as `shell: STAGE`"
        out[name] = named[0]
    return out


def test_every_rule_names_one_stage_and_runs_the_one_script():
    named = stages()
    assert len(named) >= 45 and {"judge", "generate", "paper_table1", "merge_shards"} <= set(named)
    assert sorted(p.name for p in (REPO / "workflow" / "scripts").iterdir() if p.name != "__pycache__") == ["stage.py"]


@pytest.mark.parametrize("rule", sorted(stages()))
def test_each_named_stage_is_a_function_of_the_stages(rule):
    module, _, function = stages()[rule].partition(":")
    assert module.startswith(("lmad.stages.", "lmad.studies.")) and callable(getattr(importlib.import_module(module), function))


def test_a_stage_name_brings_its_code_hash_and_reaches_no_stage_function(tmp_path):
    from lmad import smk
    from lmad.job import execute

    params = smk.stage("lmad.stages.analyze:analyze")
    assert params == {"function": "lmad.stages.analyze:analyze", "code": smk.code_hash("lmad.stages.analyze.analyze")}
    for bad in ("lmad.stages.analyze.analyze", "lmad.stages.analyze:", ":analyze"):
        with pytest.raises(ValueError, match="module:function"):
            smk.stage(bad)

    seen = {}

    def probe(out, provenance, mode):
        seen.update(out=out, mode=mode, provenance=provenance)

    job = SimpleNamespace(log=[str(tmp_path / "job.log")], input={}, output={"out": str(tmp_path / "out")},
                          params={**params, "mode": "ok"}, rule="probe", wildcards={})
    execute(smk.build_job(job, probe))  # a stage given directly (tests) wins over the param
    assert seen["mode"] == "ok" and "function" not in seen and "code" not in seen
    # the provenance's config hash is of the stage's own params only
    assert seen["provenance"]["config_sha"] == smk.provenance("probe", {}, {"mode": "ok"}, [])["config_sha"]
    with pytest.raises(ValueError, match="no stage to run"):
        smk.build_job(SimpleNamespace(**{**vars(job), "params": {"mode": "ok"}}))


def test_a_shared_module_reruns_the_rules_that_import_it(monkeypatch):
    from lmad import smk

    before = {f: smk.code_hash(f) for f in ("lmad.stages.analyze.analyze", "lmad.stages.manifest.manifest")}
    real = smk._module_source.__wrapped__
    monkeypatch.setattr(smk, "_module_source", lambda m: real(m) + (b"#edited" if m == "lmad.stats" else b""))
    assert smk.code_hash("lmad.stages.analyze.analyze") != before["lmad.stages.analyze.analyze"]  # imports stats
    assert "lmad.stats" not in smk._imported("lmad.stages.manifest")
    assert smk.code_hash("lmad.stages.manifest.manifest") == before["lmad.stages.manifest.manifest"]


def _fresh_parse(smk, monkeypatch, cache_file):
    """smk with its per-process memos cleared and its import cache at ``cache_file``."""
    for fn in (smk._imported, smk._direct_imports):
        fn.cache_clear()
    monkeypatch.setattr(smk._ImportCache, "path", cache_file)
    monkeypatch.setattr(smk._ImportCache, "_stored", None)
    monkeypatch.setattr(smk._ImportCache, "_used", {})


def test_the_import_cache_gives_the_parsed_hashes_and_survives_a_bad_file(tmp_path, monkeypatch):
    from lmad import smk

    stages = ("lmad.stages.analyze.analyze", "lmad.stages.localized_debate.extract", "lmad.stages.judge.judge")
    cache_file = tmp_path / "targets.json"
    _fresh_parse(smk, monkeypatch, cache_file)
    parsed = {s: smk.code_hash(s) for s in stages}
    assert cache_file.is_file()
    # a second process reads the targets back instead of parsing: the same hashes
    _fresh_parse(smk, monkeypatch, cache_file)
    monkeypatch.setattr(smk, "_import_targets", lambda *a: pytest.fail("parsed although cached"))
    assert {s: smk.code_hash(s) for s in stages} == parsed
    monkeypatch.undo()
    # a damaged file is a miss for every module, never an error or another hash
    for junk in ("{not json", '["a list"]', '{"x": 3}'):
        cache_file.write_text(junk)
        _fresh_parse(smk, monkeypatch, cache_file)
        assert {s: smk.code_hash(s) for s in stages} == parsed
        monkeypatch.undo()
    for fn in (smk._imported, smk._direct_imports):
        fn.cache_clear()
