"""Every rule that runs library code without a model call carries a ``code_hash`` param of the
code that makes its artifact (lmad.smk.code_hash: the stage's module and every lmad module it
imports), so editing that code reruns the rule (params are a rerun trigger; its two-line
script never changes)."""
import re

from conftest import REPO


def _rules():
    """(file, rule name, body text) of every rule in rules/*.smk."""
    for path in sorted((REPO / "rules").glob("*.smk")):
        current = None
        for line in path.read_text().splitlines():
            start = re.match(r"^(\s*)(?:rule|checkpoint) (\w+):", line)
            if start:
                if current:
                    yield current
                current = [path.name, start.group(2), len(start.group(1)), []]
            elif current is not None:
                if line.strip() and len(line) - len(line.lstrip()) <= current[2]:
                    yield current
                    current = None
                else:
                    current[3].append(line)
        if current:
            yield current


def test_every_paper_rule_hashes_its_code():
    paper = {}
    for file, name, _, body in _rules():
        text = "\n".join(body)
        outputs = text.split("output:")[1].split("log:")[0] if "output:" in text else ""
        if "layout.paper(" in outputs or "paper_figure_outputs" in outputs:
            paper[f"{file}:{name}"] = "code_hash(" in text
    assert len(paper) >= 10, paper  # the parse found the paper rules
    assert [rule for rule, hashed in paper.items() if not hashed] == []


# Rules without a code hash, and why: model rules (their replies are cached per request, and a
# rerun of one would re-read every cached call), the data plumbing (a rebuilt questions table
# reruns the whole run: a loader change is a new dataset version, run with --forcerun
# prepare_data), and the target rules that run no code.
UNHASHED = {"prepare_data", "backbone_questions", "convert_model", "shard_data", "merge_shards", "all", "paper"}


def test_every_rule_that_runs_library_code_without_a_model_hashes_it():
    missing = [f"{file}:{name}" for file, name, _, body in _rules()
               if name not in UNHASHED and "model_resources(" not in "\n".join(body)
               and "code_hash(" not in "\n".join(body)]
    assert missing == []


def test_a_shared_module_reruns_the_rules_that_import_it(monkeypatch):
    from lmad import smk

    before = {f: smk.code_hash(f) for f in ("lmad.stages.analyze.analyze", "lmad.stages.manifest.manifest")}
    real = smk._module_source.__wrapped__
    monkeypatch.setattr(smk, "_module_source", lambda m: real(m) + (b"#edited" if m == "lmad.stats" else b""))
    assert smk.code_hash("lmad.stages.analyze.analyze") != before["lmad.stages.analyze.analyze"]  # imports stats
    assert "lmad.stats" not in smk._imported("lmad.stages.manifest")
    assert smk.code_hash("lmad.stages.manifest.manifest") == before["lmad.stages.manifest.manifest"]
