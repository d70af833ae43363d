"""docs/departures.md: every departure is tagged, and no `[needs: …]` tag outlives its capability —
a tagged config key, method, backend capability, benchmark reader or prompt template that exists
fails here, so the departure is deleted or rewritten when the capability arrives."""
import ast
import re

import pytest

from conftest import REPO
from lmad import config_schema
from lmad.data import DATASETS
from lmad.registry import METHODS

DOC = REPO / "docs" / "departures.md"
TAG = re.compile(r"\[(choice|needs: ([^\]]*))\]")
NEEDS = re.compile(r"^([a-z]+):(\S+)$")
BULLET = re.compile(r"^- (?!`)")  # a departure; the tag legend's items open with a backquote


def schema_has(path: str) -> bool:
    node = config_schema.schema()
    for key in path.split("."):
        props = node.get("properties") if isinstance(node, dict) else None
        if not isinstance(props, dict) or key not in props:
            return False
        node = props[key]
    return True


def backend_has(spec: str) -> bool:
    """``BACKEND.CAPABILITY``: a method, or an ``__init__`` parameter, of a class in
    workflow/lmad/backends/BACKEND_backend.py (read, not imported: vLLM need not be installed)."""
    backend, _, capability = spec.partition(".")
    path = REPO / "workflow" / "lmad" / "backends" / f"{backend}_backend.py"
    if not path.exists() or not capability:
        raise AssertionError(f"backend tag {spec!r}: no {path.name} or no capability named")
    for cls in (n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.ClassDef)):
        for fn in (n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            if fn.name == capability:
                return True
            if fn.name == "__init__" and capability in {a.arg for a in fn.args.args + fn.args.kwonlyargs}:
                return True
    return False


#: tag kind -> whether the capability it names exists
HAS = {
    "schema": schema_has,
    "method": lambda name: name in METHODS,
    "backend": backend_has,
    "dataset": lambda name: name in DATASETS,
    "prompt": lambda name: (REPO / "config" / "prompts" / f"{name}.txt").exists(),
}


def tags(text: str) -> list[tuple[int, str]]:
    """(line number, tag body) of every tag of the departures (the legend's examples left out)."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if "`[" in line:  # the legend quotes tags in backquotes
            continue
        out += [(n, m.group(1)) for m in TAG.finditer(line)]
    return out


def check(text: str) -> list[str]:
    """Every problem of a departures text: an untagged departure, an unknown kind, a capability
    that exists."""
    problems = []
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("## "))
    for n, line in enumerate(lines[start:], start + 1):
        if BULLET.match(line) and not TAG.match(line[2:]):
            problems.append(f"line {n}: a departure without a leading tag: {line[:60]!r}")
    for n, body in tags(text):
        if body == "choice":
            continue
        m = NEEDS.match(body.removeprefix("needs: "))
        if not m:
            problems.append(f"line {n}: malformed tag [{body}]")
        elif m.group(1) not in HAS:
            problems.append(f"line {n}: unknown tag kind {m.group(1)!r} (known: {', '.join(HAS)})")
        elif HAS[m.group(1)](m.group(2)):
            problems.append(f"line {n}: [{body}] — the capability exists now: delete or rewrite the departure")
    return problems


def test_every_departure_is_tagged_and_no_tag_outlives_its_capability():
    text = DOC.read_text()
    assert len(tags(text)) >= 40
    assert check(text) == []


@pytest.mark.parametrize("tag, why", [
    ("[needs: method:mad]", "the capability exists"),
    ("[needs: method:chair]", "the capability exists"),
    ("[needs: method:chair-none]", "the capability exists"),
    ("[needs: schema:societies.split]", "the capability exists"),
    ("[needs: schema:committees]", "the capability exists"),
    ("[needs: backend:vllm.next_token_logprobs]", "the capability exists"),
    ("[needs: backend:transformers.perturb]", "the capability exists"),
    ("[needs: dataset:globalopinionqa]", "the capability exists"),
    ("[needs: prompt:debate_revise]", "the capability exists"),
    ("[needs: gpu:h200]", "unknown tag kind"),
    ("[needs: schema]", "malformed"),
])
def test_the_check_catches_an_outlived_or_unknown_tag(tag, why):
    text = f"# Departures\n\n## A paper\n\n- {tag} **Something.** Its reason.\n"
    problems = check(text)
    assert len(problems) == 1 and why in problems[0]


def test_the_check_catches_an_untagged_departure_and_accepts_absent_capabilities():
    assert "without a leading tag" in check("# D\n\n## P\n\n- **Untagged.** A reason.\n")[0]
    absent = ("[needs: method:chair-after] [needs: schema:societies.no_such_key] [needs: backend:vllm.perturb] "
              "[needs: dataset:frames] [needs: prompt:no_such_template]")
    assert check(f"# D\n\n## P\n\n- {absent} **Absent.** A reason.\n- [choice] **Deliberate.** A reason.\n") == []


def test_every_paper_config_has_a_section_and_paper_configs_links_here():
    text = DOC.read_text()
    for config in ("paper", "truemad", "wdh", "opinion", "du-et-al"):
        assert re.search(rf"^## .*`config/{config}\.yaml`", text, re.M), config
    assert "departures.md" in (REPO / "docs" / "paper-configs.md").read_text()
