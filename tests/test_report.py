"""`snakemake --report` after a run writes the report; before it, it says what to run first. The
`benchmark:` files of a run go under its logs/, never into the checkout's benchmarks/ scripts."""
from conftest import make_config, snakemake


def test_the_report_before_a_run_says_what_to_run_first(tmp_path):
    make_config(tmp_path, n=1, methods=["cot"])
    proc = snakemake(tmp_path, "--report", "report.html", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "snakemake --report reports a finished run" in out, out[-3000:]
    assert "run the workflow first" in out and "marked for report but does not exist" not in out
    assert not (tmp_path / "report.html").exists()


def test_a_run_then_its_report_and_benchmarks_under_logs(tmp_path):
    make_config(tmp_path, n=1, methods=["cot", "sc"])
    snakemake(tmp_path)
    snakemake(tmp_path, "--report", "report.html")
    html = (tmp_path / "report.html").read_text()
    assert "table1.md" in html and "accuracy.png" in html
    benchmarks = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.tsv"))
    assert "logs/benchmarks/scripted/judge.tsv" in benchmarks and "logs/benchmarks/scripted/generate/cot.tsv" in benchmarks
    assert all(b.startswith("logs/benchmarks/") for b in benchmarks), benchmarks


def test_only_a_report_of_an_earlier_run_is_checked():
    from lmad.report_check import report_only

    assert report_only(["snakemake", "--report", "r.html"]) and report_only(["snakemake", "--report=r.html"])
    assert not report_only(["snakemake", "--report", "r.html", "--report-after-run"])  # it runs first
    assert not report_only(["snakemake", "--cores", "2", "--report-stylesheet", "s.css"])
