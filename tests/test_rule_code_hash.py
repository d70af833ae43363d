"""Every rule that writes a paper artifact (results/paper/) carries a ``code_hash`` param of the
functions that make it, so editing one of them reruns that rule (params are a rerun trigger;
its two-line script never changes)."""
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
