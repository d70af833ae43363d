"""The optional studies (lmad.studies): every registered study is a complete folder, an enabled
study's outputs are targets of `rule all`, and a new study is its folder plus one line in
STUDIES — a toy study added so to a copy of the checkout is planned by a dry run."""
import re
import subprocess
import sys
from pathlib import Path

from conftest import REPO
from lmad import studies
from lmad.plan import Plan
from test_checkout_code import copy_checkout
from test_plan import demo_config


def test_every_study_is_a_folder_with_its_rules_planning_and_stages():
    for name in studies.STUDIES:
        folder = studies.FOLDER / name
        assert (folder / "rules.smk").is_file() and (folder / "stages.py").is_file(), name
        planning = studies.planning(name)
        assert callable(planning.enabled) and hasattr(planning.Planner, "outputs"), name
        rules = (folder / "rules.smk").read_text(encoding="utf-8")
        # each rule runs a stage function of its own study
        for module in re.findall(r'stage\("([\w.]+):', rules):
            assert module.startswith(f"lmad.studies.{name}."), (name, module)


def test_only_enabled_studies_add_targets():
    plain = Plan(demo_config())
    assert plain.enabled_studies == []
    jury = Plan(demo_config(jury={"pair": ["cot", "sc"], "judges": []}))
    assert jury.enabled_studies == ["jury"]
    assert set(jury.all_outputs()) - set(plain.all_outputs()) == {"results/paper/jury.csv", "results/paper/jury.md"}
    assert jury.study("jury").verdict_tables() == ["results/smollm2-135m/disagreement/jury_smollm2-135m.parquet"]


TOY_PLAN = '''
from lmad import layout


def enabled(config):
    return True


class Planner:
    def __init__(self, plan):
        self.plan = plan

    def outputs(self):
        return [layout.paper("toy.md")]

    def model_rules(self):
        return {}
'''

TOY_RULES = '''
rule toy_table:
    input:
        questions=plan.questions.configured(),
    output:
        md=layout.paper("toy.md"),
    params:
        **stage("lmad.studies.toy.stages:toy_table"),
    shell:
        STAGE
'''

TOY_STAGES = '''
from lmad.atomic import write_text


def toy_table(questions, md, provenance):
    write_text(md, f"{len(questions)} question tables\\n")
'''


def test_a_toy_study_is_its_folder_and_one_registration_line(tmp_path):
    checkout = copy_checkout(tmp_path)
    toy = checkout / "workflow" / "lmad" / "studies" / "toy"
    toy.mkdir()
    rules = TOY_RULES
    for name, text in (("__init__.py", '"""A toy study."""\n'), ("plan.py", TOY_PLAN), ("rules.smk", rules),
                       ("stages.py", TOY_STAGES)):
        (toy / name).write_text(text.lstrip(), encoding="utf-8")
    registry = checkout / "workflow" / "lmad" / "studies" / "__init__.py"
    text = registry.read_text(encoding="utf-8")
    registry.write_text(text.replace("STUDIES = (\n", 'STUDIES = (\n    "toy",\n', 1), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--forceall", "--snakefile", str(checkout / "Snakefile"),
                           "--directory", str(checkout), "--configfile", str(checkout / "config.yaml")],
                          capture_output=True, text=True, timeout=600,
                          env={"PATH": "/usr/bin:/bin", "LMAD_ALLOW_TEST_DOUBLE": "1", "HOME": str(tmp_path)})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert re.search(r"^(local)?rule toy_table:", out, flags=re.MULTILINE), out[-4000:]
    assert "results/paper/toy.md" in out


def test_the_snakefile_includes_no_study_rules_by_name():
    snakefile = (REPO / "Snakefile").read_text(encoding="utf-8")
    assert not [n for n in studies.STUDIES if f"{n}.smk" in snakefile]
    assert not [p for p in (REPO / "rules").glob("*.smk") if p.stem in studies.STUDIES]
    assert Path(studies.rules_file("jury")).is_file()
