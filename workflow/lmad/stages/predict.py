"""Rule ``predict``: final answers of the single-round methods (CoT, self-consistency)."""
from __future__ import annotations

import logging

from ..answers import reading_of
from ..call_accounting import total_cost
from ..schemas import read_table, write_table
from .units import check_aligned, check_unit_paths

log = logging.getLogger(__name__)


def predict(questions: str, samples: str, predictions: str, method: str, provenance: dict) -> None:
    qs = read_table("questions", questions).to_dicts()
    by_q: dict[str, list[dict]] = {}
    for row in read_table("samples", samples).sort("agent").to_dicts():
        by_q.setdefault(row["qid"], []).append(row)
    out = []
    for q in qs:
        rows = by_q.get(q["qid"])
        if not rows:
            raise ValueError(f"{samples}: no samples for question {q['qid']}")
        reading = reading_of(q)
        # samples grouped by the answer type's equivalence: 1/2 and 0.5, (B) and B vote together
        answer, info = reading.vote([r["answer"] for r in rows])
        out.append({"qid": q["qid"], "dataset": q["dataset"], "method": method, "prediction": answer,
                    "prediction_norm": reading.key(answer),
                    "stop_reason": "single" if len(rows) == 1 else ("vote_tie" if info["tie"] else "vote"),
                    "stop_round": 0, **total_cost(rows)})
    write_table("predictions", out, predictions, provenance)
    log.info("%s: %d predictions", method, len(out))


def predict_datasets(questions: list[str], samples: list[str], predictions: list[str], method: str,
                     units: list[tuple[str, str]], provenance: dict) -> None:
    """Rule ``predict``: ``predict`` for every dataset of the job (lists aligned with ``units``)."""
    check_aligned("predict", len(units), questions=questions, samples=samples, predictions=predictions)
    check_unit_paths("predict", units, questions=questions, samples=samples, predictions=predictions)
    for q, s, p in zip(questions, samples, predictions):
        predict(q, s, p, method, provenance)
