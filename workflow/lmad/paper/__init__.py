"""Paper tables, figures and the trace viewer, computed from saved Parquet only (rule paper).

``tables``   Table 1 (accuracy, Δ vs the strongest baseline, bootstrap CI), Table 2 (gate-activated
             subset), cost table — plain arithmetic on accuracies, so the paper's own numbers
             reproduce through the same code (tests/test_paper_tables.py).
``headroom`` the When-Debate-Helps accounting (round-0 vote, proposal hit, recovered / new-correct /
             damage) with its identity asserted on every run.
``guard_rejections`` Table 2's gate-activated subset and what each commit-guard check rejected.
``figures``  matplotlib figures (PNG + PDF).
``viewer``   one self-contained HTML trace viewer.
"""

from ..data.benchmarks import BENCHMARKS
from ..registry import METHODS

#: each benchmark's label (lmad.data.benchmarks)
DATASET_LABELS = {b.name: b.label for b in BENCHMARKS.values()}


def label(name: str) -> str:
    """A method's (lmad.registry) or a dataset's label in tables and figures."""
    return METHODS[name].label if name in METHODS else DATASET_LABELS.get(name, name)
