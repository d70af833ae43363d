"""Paper tables, figures and the trace viewer, computed from saved Parquet only (rule paper).

``tables``   Table 1 (accuracy, Δ vs the strongest baseline, bootstrap CI), Table 2 (gate-activated
             subset), cost table — plain arithmetic on accuracies, so the paper's own numbers
             reproduce through the same code (tests/test_paper_tables.py).
``headroom`` the When-Debate-Helps accounting (round-0 vote, proposal hit, recovered / new-correct /
             damage) with its identity asserted on every run.
``figures``  matplotlib figures (PNG + PDF).
``viewer``   one self-contained HTML trace viewer.
"""

LABELS = {"cot": "CoT", "sc": "SC", "consensus": "Cons.", "mad": "MAD", "dmad": "dMAD", "lmad": "LMAD",
          "lmad-concrete": "Concrete", "lmad-always": "Always", "promptmad": "PromptMAD", "truemad": "TrueMAD",
          "computemad": "ComputeMAD", "selfadvicemad": "Self-AdviceMAD", "dmad-manners": "dMAD-manners",
          "truedmad": "TrueDMAD"}
DATASET_LABELS = {"hotpotqa": "HotpotQA", "2wikimultihopqa": "2Wiki", "musique": "MuSiQue", "strategyqa": "StrategyQA"}


def label(name: str) -> str:
    return LABELS.get(name, DATASET_LABELS.get(name, name))
