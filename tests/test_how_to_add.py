"""docs/layout.md "How to add", measured: in a copy of the checkout, a toy benchmark, a toy backend
and a toy debate method are each added by editing only the files the table names, the number of
files each touched is the table's figure, and one dry run of a config using all three plans their
jobs (no list elsewhere needed an edit: the schema's lists are filled in from the registries)."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from conftest import REPO

#: what a run needs of the checkout (the rest, tests and docs, is not copied)
COPIED = ("Snakefile", "workflow", "rules", "config", "data", "profiles", "pyproject.toml")
IGNORED = shutil.ignore_patterns("__pycache__", ".snakemake", "results", "cache", "logs", ".venv*", "*.pyc")

TOY_BENCHMARK = '''

def _toyqa(raw: dict, where: str, seed: int) -> dict:
    """A toy benchmark: {"id", "q", "a"} rows, a free-form answer."""
    return {"qid": raw["id"], "question": raw["q"], "context": [], "answer": raw["a"], "aliases": [],
            "qtype": "toy", "supporting_facts": [], "choices": [], "choice_order": [], "survey": ""}


register(Benchmark("toyqa", _toyqa, "span", "ToyQA"))
'''

TOY_BACKEND_MODULE = '''"""A toy backend: the test double under another name."""
from .scripted import ScriptedBackend


class ToyBackend(ScriptedBackend):
    pass
'''

TOY_BACKEND_ENTRY = '''
register(BackendEntry("toy", "lmad.backends.toy:ToyBackend", _COMMON, chunk=8, about="a toy"))
'''

TOY_METHOD = '''    Protocol("toymad", "ToyMAD", opening=_MAD_OPENING, exchange=(Revise("debate_toy"),), short="Toy"),
'''


def _insert(path: Path, before: str, text: str) -> None:
    source = path.read_text(encoding="utf-8")
    assert source.count(before) == 1, f"{path}: expected one {before!r}"
    path.write_text(source.replace(before, text + before), encoding="utf-8")


def add_benchmark(root: Path) -> None:
    lib = root / "workflow" / "lmad"
    _insert(lib / "data" / "benchmarks.py", "\n#: every benchmark's name", TOY_BENCHMARK)


def add_backend(root: Path) -> None:
    lib = root / "workflow" / "lmad"
    (lib / "backends" / "toy.py").write_text(TOY_BACKEND_MODULE, encoding="utf-8")
    registry = lib / "backend_registry.py"
    registry.write_text(registry.read_text(encoding="utf-8") + TOY_BACKEND_ENTRY, encoding="utf-8")


def add_debate_method(root: Path) -> None:
    lib = root / "workflow" / "lmad"
    _insert(lib / "protocols" / "debate" / "methods.py", "]}\n\n\ndef protocol(", TOY_METHOD)
    # its own prompt template: a file of its own, which the schema's `prompts` picks up
    prompts = root / "config" / "prompts"
    (prompts / "debate_toy.txt").write_text((prompts / "debate_engage.txt").read_text(encoding="utf-8"))


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


def touched(before: dict[str, bytes], after: dict[str, bytes]) -> set[str]:
    return {name for name in before.keys() | after.keys() if before.get(name) != after.get(name)}


def documented_counts() -> dict[str, int]:
    """``kind -> files`` of docs/layout.md's "How to add" table (a row `| kind | n | ...`)."""
    text = (REPO / "docs" / "layout.md").read_text(encoding="utf-8")
    section = text[text.index("## How to add"):]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^\| (\w[\w ]*?) \| (\d+) \|", section, re.MULTILINE)}


def test_adding_a_benchmark_a_backend_and_a_debate_method_touches_the_documented_files(tmp_path):
    root = tmp_path / "checkout"
    root.mkdir()
    for name in COPIED:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, root / name, ignore=IGNORED)
        elif source.exists():
            shutil.copy2(source, root / name)
    counts = {}
    for kind, add in (("benchmark", add_benchmark), ("backend", add_backend), ("debate method", add_debate_method)):
        before = snapshot(root)
        add(root)
        files = touched(before, snapshot(root))
        templates = {f for f in files if f.startswith("config/prompts/") and f not in before}
        assert kind == "debate method" or not templates
        counts[kind] = len(files - templates)  # a method's new prompt templates are counted apart
    documented = documented_counts()
    assert {k: documented.get(k) for k in counts} == counts, f"docs/layout.md 'How to add' says {documented}"

    work = tmp_path / "run"
    work.mkdir()
    (work / "toyqa.jsonl").write_text('{"id": "t1", "q": "Who?", "a": "Ada"}\n{"id": "t2", "q": "What?", "a": "x"}\n')
    prompts = root / "config" / "prompts"
    config = {
        "seed": 0, "cache_dir": str(work / "cache"),
        "datasets": {"toyqa": {"source": "jsonl", "path": str(work / "toyqa.jsonl"), "n": 2}},
        "models": {"toybot": {"backend": "toy", "model": "toy"}},
        "backbones": ["toybot"], "judge": {"model": "toybot", "max_tokens": 4},
        "methods": ["cot", "toymad"], "agents": {"temperatures": [0.1, 0.5, 0.9]}, "solver": {"max_tokens": 64},
        "prompts": {p.stem: str(p) for p in prompts.glob("*.txt")},
    }
    (work / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--snakefile", str(root / "Snakefile"),
                           "--directory", str(work), "--configfile", str(work / "config.yaml"), "--cores", "1"],
                          env=env, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    assert re.search(r"rule prepare_data:.*?dataset=toyqa", out, re.DOTALL), out[-4000:]
    assert re.search(r"rule debate_round:.*?method=toymad", out, re.DOTALL), out[-4000:]
    assert "debate_toy.txt" in (work / "config.yaml").read_text()  # the config names it; the schema took it
    assert "toybot/toyqa" in out
