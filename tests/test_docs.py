"""Docs that cannot rot: every cited heading and every relative link exists, the README stays a
front door, the layout table lists every rule file, config/README.md lists every config key, and no
file of the tree names an issue number or who measured something when.

A citation is a document's name followed by a quoted heading, anywhere in the repository: the
README, a page under docs/ or config/README.md, then the heading in double quotes (a comment may
break it over two lines). It must name a file that exists and a heading of that file, matched
exactly (case-sensitive) against the text after the heading's '#'s.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import jsonschema
import pytest
import yaml

from lmad import config_schema

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = REPO / "docs"
CONFIG_README = REPO / "config" / "README.md"
LAYOUT = DOCS / "layout.md"
SCHEMA = REPO / "config" / "schema" / "config.schema.yaml"

# files that may cite a heading, by suffix or name; folders never searched (outputs, caches, envs)
CITING_SUFFIXES = {".py", ".smk", ".yaml", ".yml", ".md", ".txt", ".sh", ".toml", ".rst"}
CITING_NAMES = {"Snakefile"}
SKIP_DIRS = {".git", "results", "cache", "logs", "resources", ".snakemake", ".lmad", "__pycache__",
             ".pytest_cache", ".hypothesis", ".ruff_cache", "node_modules"}

# <document> "<heading>": the README (README or README.md), docs/<page>.md, config/README.md
CITATION = re.compile(r'(?<![\w/.-])(config/README\.md|docs/[\w.-]+\.md|README(?:\.md)?)[ \t,]+\(?[ \t]*"([^"\n]{1,200})"')
# a line break inside a comment or docstring: the next line's comment marker is not part of the text
CONTINUATION = re.compile(r"[ \t]*\n[ \t]*(?:#:?|//|\*)?[ \t]*")
HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
FENCE = re.compile(r"^[ \t]*(```|~~~)")
LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(([^)\s]+)\)")
HISTORY = re.compile(r"\bstop \d+|\bseed 00\d", re.IGNORECASE)

DOC_PAGES = sorted([README, CONFIG_README, *DOCS.glob("*.md")])


def citing_files() -> list[Path]:
    found = []
    for root, dirs, files in os.walk(REPO):
        rel = Path(root).relative_to(REPO)
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith(".venv")
                         and not d.endswith(".egg-info"))
        for name in sorted(files):
            path = Path(root) / name
            if path.suffix in CITING_SUFFIXES or name in CITING_NAMES or rel == Path(".ci"):
                found.append(path)
    return found


def prose_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, line) of a Markdown file outside fenced code blocks."""
    out, fenced = [], False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append((number, line))
    return out


def headings(path: Path) -> list[str]:
    return [" ".join(m.group(2).split()) for _, line in prose_lines(path) if (m := HEADING.match(line))]


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for heading in headings(path):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def document(name: str) -> Path:
    return README if name in ("README", "README.md") else REPO / name


def citations() -> list[tuple[str, str, str]]:
    """(where, document, heading) of every citation in the repository."""
    out = []
    for path in citing_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        text = CONTINUATION.sub(" ", text.replace('\\"', '"'))
        for m in CITATION.finditer(text):
            out.append((str(path.relative_to(REPO)), m.group(1), " ".join(m.group(2).split())))
    return out


def section(path: Path, title: str, code: bool = False) -> list[str]:
    """The lines of one section, from its heading to the next heading of its level or above
    (prose only, unless ``code``: then fenced blocks too)."""
    prose = {n for n, _ in prose_lines(path)}
    level, out = None, []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = HEADING.match(line) if number in prose else None
        if m and level is not None and len(m.group(1)) <= level:
            break
        if level is not None and (code or number in prose):
            out.append(line)
        if m and m.group(2) == title:
            level = len(m.group(1))
    assert level is not None, f"{path.relative_to(REPO)} has no heading {title!r}"
    return out


def test_the_search_finds_citations():
    found = citations()
    assert len(found) > 20, found  # the code cites the docs on dozens of lines
    assert any(doc.startswith("docs/") for _, doc, _ in found)


def test_every_cited_heading_exists():
    wrong = []
    for where, doc, heading in citations():
        target = document(doc)
        if not target.is_file():
            wrong.append(f"{where}: {doc} does not exist (cited for {heading!r})")
        elif heading not in headings(target):
            wrong.append(f"{where}: {doc} has no heading {heading!r}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("page", DOC_PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(page):
    wrong = []
    for number, line in prose_lines(page):
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                continue
            file, _, anchor = target.partition("#")
            path = (page.parent / file).resolve() if file else page
            if not path.exists():
                wrong.append(f"line {number}: {target} — no such file")
            elif anchor and path.suffix == ".md" and anchor not in anchors(path):
                wrong.append(f"line {number}: {target} — no heading with anchor #{anchor}")
    assert not wrong, f"{page.relative_to(REPO)}:\n" + "\n".join(wrong)


def test_readme_is_a_front_door():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; move detail to docs/"


@pytest.mark.parametrize("page", DOC_PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_no_history_in_docs(page):
    hits = [f"line {n}: {line.strip()}" for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
            if HISTORY.search(line)]
    assert not hits, f"{page.relative_to(REPO)} (history lives in git; name features by what they are):\n" + "\n".join(hits)


def layout_table_lines() -> list[str]:
    return [line for line in section(LAYOUT, "Layout") if line.lstrip().startswith("|")]


def test_layout_table_lists_every_rule_file():
    table = "\n".join(layout_table_lines())
    missing = [p.name for p in sorted((REPO / "rules").glob("*.smk")) if f"`rules/{p.name}`" not in table]
    assert not missing, f"docs/layout.md's Layout table lacks {missing}"


def test_layout_table_paths_exist():
    roots = ("Snakefile", "workflow/", "config/", "rules/", "envs/", "data/", "benchmarks/", "tests/",
             "docs/", "profiles/")
    paths = [p for line in layout_table_lines() for p in re.findall(r"`([^`]+)`", line)
             if p.startswith(roots) and not re.search(r"[{}*<>$ ]", p)]
    assert len(paths) > 20
    missing = [p for p in paths if not (REPO / p).exists()]
    assert not missing, f"docs/layout.md's Layout table names paths that do not exist: {missing}"


def test_config_readme_lists_every_top_level_key():
    schema = config_schema.schema()
    lines = section(CONFIG_README, "Top-level keys")
    listed = {m.group(1) for line in lines if (m := re.match(r"\|\s*`([\w-]+)`\s*\|", line))}
    assert listed == set(schema["properties"]), (
        f"config/README.md 'Top-level keys': missing {sorted(set(schema['properties']) - listed)}, "
        f"not in the schema {sorted(listed - set(schema['properties']))}")
    required = " ".join(lines).split("Required keys:")[1].split(".")[0]
    assert sorted(re.findall(r"`([\w-]+)`", required)) == sorted(schema["required"]), required


def test_readme_example_config_is_valid():
    """The README's own-config example passes the schema and names files that exist."""
    text = "\n".join(section(README, "Your own config", code=True))
    example = [b for b in re.findall(r"```yaml\n(.*?)```", text, re.DOTALL) if b.startswith("seed:")]
    assert len(example) == 1, "one example config (a yaml block starting with seed:) in 'Your own config'"
    config = yaml.safe_load(example[0])
    schema = config_schema.schema()
    errors = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
              for e in jsonschema.validators.validator_for(schema)(schema).iter_errors(config)]
    assert not errors, errors
    files = [d["path"] for d in config["datasets"].values() if "path" in d] + list(config["prompts"].values())
    assert all((REPO / f).is_file() for f in files), files


# "issue 41", "Issue #42", "issue no. 3", "PR 7", "pull request #9"; or a bare "#42" standing as a
# reference ("see #42", "(#42)", "#42:") — not a colour ("#444", "color: #555;", "solid #999}"), an
# HTML entity ("&#39;"), a heading ("## 2"), a link anchor ("(#section-2)") or a regex (r"#\d+")
ISSUE = re.compile(r"\b(?:issues?|pull[ \t]+requests?|PRs?)[ \t-]*(?:no\.?[ \t]*)?#?\d+\b"
                   r"|(?<![\w&#/:'\"\\$-])#\d+\b(?![\w'\"{};-])", re.IGNORECASE)
# who ran or measured something when: "this session", "an earlier session's run", "the last session"
SESSION = re.compile(r"\b(?:this|last|earlier|an[ \t]+earlier|previous|another|the[ \t]+last|that|a[ \t]+later)"
                     r"[ \t]+session(?:'s)?\b", re.IGNORECASE)


@pytest.mark.parametrize("line, issue", [
    ("# issue 41: the cache", True), ("see Issue #42", True), ("issues 41 and 42", True), ("issue no. 3", True),
    ("(PR #12)", True), ("pull request 9", True), ("fixes #7.", True), ("#42: the split", True), ("[#42]", True),
    ('"color": "#444"', False), ("color: #555;", False), ("border:1px solid #999}", False), ("&#39;", False),
    ("## 2. Steps", False), ("[a](#section-2)", False), ('re.compile(r"#\\d+")', False), ("x = 1  # 1-based", False),
    ("fill: #1f2937", False), ("agent 2 of 3 issued", False),
])
def test_issue_pattern(line, issue):
    assert bool(ISSUE.search(line)) == issue, line


def tree_lines():
    """(file, line number, line) of every file the citation search reads (code, tests, configs,
    docs, rule files, profiles, CI), this file aside: its examples are the patterns' own."""
    for path in citing_files():
        if path == Path(__file__).resolve():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            yield path.relative_to(REPO), number, line


def test_no_issue_numbers_in_the_tree():
    """Code, tests, configs and docs name features by what they are; which issue asked for one is git's."""
    hits = [f"{p}:{i}: {line.strip()}" for p, i, line in tree_lines() if ISSUE.search(line)]
    assert not hits, "issue numbers (history lives in git):\n" + "\n".join(hits)


def test_no_session_narrative_in_the_tree():
    """A measured figure keeps its command and the commit it was measured at, not who ran it when."""
    hits = [f"{p}:{i}: {line.strip()}" for p, i, line in tree_lines() if SESSION.search(line)]
    assert not hits, "who/when narrative (history lives in git):\n" + "\n".join(hits)
