"""Yes/no answers (StrategyQA): a span read as yes or no.

Extraction is the span rule with yes/no reading ("Yes, they are." → "yes"); the grouping key
and the official scoring are the span type's.
"""

from __future__ import annotations

from typing import Sequence

from .base import register
from .span import ANSWER_LINES, SpanType, extract_answer


@register
class YesNoType(SpanType):
    name = "yes_no"

    def instruction(self, n_choices: int = 0) -> str:
        return ANSWER_LINES["yes/no"]

    def extract(self, text, choices: Sequence[str] = (), yes_no: bool = True, n_choices: int = 0) -> tuple[str, str]:
        return extract_answer(text, yes_no=True)

    def mentions(self, text: str, gold: str, choices: Sequence[str] = ()) -> bool:
        return False  # "yes" or "no" in a repair's words says nothing about the answer
