"""Strict JSON of untrusted model output: one loader for every parser of model replies.

``json.loads`` alone lets a model reply raise more than ``JSONDecodeError``: ``"[" * 1000``
raises ``RecursionError``, a 5,000-digit integer ``ValueError`` (Python's int-digit limit),
and a megabyte of text costs what it costs. This loader never raises on a string: it refuses
replies over ``MAX_CHARS``, nesting deeper than ``MAX_DEPTH``, integers longer than
``MAX_INT_DIGITS`` and the non-standard constants ``NaN``/``Infinity``, and returns the
reason, which each parser records as its fallback's cause. Model output is never evaluated.
"""
from __future__ import annotations

import json
from typing import Any

MAX_CHARS = 200_000  # far above any structured reply's token budget
MAX_DEPTH = 32  # the deepest schema sent to a model nests 3 levels
MAX_INT_DIGITS = 30

_OPEN, _CLOSE = frozenset("[{"), frozenset("]}")


def _depth(text: str) -> int:
    """Deepest bracket nesting outside JSON strings (a linear scan, no recursion)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in _OPEN:
            depth += 1
            deepest = max(deepest, depth)
        elif ch in _CLOSE:
            depth -= 1
    return deepest


def _int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(digits.lstrip('-'))} digits")
    return int(digits)


def _constant(name: str):
    raise ValueError(f"non-standard constant {name}")


def load_model_json(text: Any) -> tuple[Any, str]:
    """``(value, "")`` for a reply that is one strict JSON document, else ``(None, reason)``."""
    if not isinstance(text, str):
        return None, f"not text ({type(text).__name__})"
    if len(text) > MAX_CHARS:
        return None, f"reply of {len(text)} characters (limit {MAX_CHARS})"
    if (depth := _depth(text)) > MAX_DEPTH:
        return None, f"nesting {depth} deep (limit {MAX_DEPTH})"
    try:
        return json.loads(text, parse_int=_int, parse_constant=_constant), ""
    except json.JSONDecodeError as err:
        return None, f"not JSON: {err}"
    except (ValueError, RecursionError, TypeError) as err:  # from the hooks, or a case the scan missed
        return None, f"not acceptable JSON: {err}"
