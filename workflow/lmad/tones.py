"""Debate tone (the layered-disagreement paper): the manipulation of the disagreement layers.

A tone is part of a debating method's identity: ``mad`` is MAD at the ``neutral`` tone (the
pipeline's debates as they always were), ``mad@friendly`` and ``mad@hostile`` are MAD with a
tone instruction. ``lmad.registry`` lists every toned variant as a method of its own, so a
method x tone is its own column in every table, its own results folder and its own label.

The instruction goes only into debate-turn prompts (round t >= 1 of a debate: revisions,
turns, manner steps and advice; LMAD's local debate): the initial proposals, the final
aggregation (vote, moderator) and every judge stay neutral, so round 0 is the shared
proposals table whatever the tone, and a toned method differs from its neutral one only in
the calls the tone reaches. The instruction is appended to the turn's system message; the
text of each tone is its own prompt file (config ``prompts: tone_<tone>``).
"""
from __future__ import annotations

from string import Template
from typing import Mapping

TONES = ("neutral", "friendly", "hostile")
SEPARATOR = "@"


def toned(name: str, tone: str) -> str:
    """The method name of ``name`` at ``tone`` (neutral: the name itself)."""
    if tone not in TONES:
        raise ValueError(f"unknown tone {tone!r}; known: {list(TONES)}")
    return name if tone == "neutral" else f"{name}{SEPARATOR}{tone}"


def split_tone(name: str) -> tuple[str, str]:
    """(base method, tone) of a method name: ``mad@hostile`` -> (``mad``, ``hostile``)."""
    base, sep, tone = name.partition(SEPARATOR)
    tone = tone if sep else "neutral"
    if tone not in TONES or tone == "neutral" and sep:
        raise ValueError(f"method {name!r}: unknown tone {tone!r}; known: {list(TONES[1:])}")
    return base, tone


def tone_role(tone: str) -> str | None:
    """The prompt role (config ``prompts`` key) of a tone's instruction; None for neutral."""
    return None if tone == "neutral" else f"tone_{tone}"


def with_tone(messages: tuple[tuple[str, str], ...], instruction: str,
              fields: Mapping[str, str] | None = None) -> tuple[tuple[str, str], ...]:
    """``messages`` with the tone ``instruction`` appended to the system message (one is
    added when the template has none); an empty instruction leaves them unchanged.
    ``fields``: the turn's template fields (lmad.prompts.question_fields), which fill the
    instruction's own ``$evidence`` and the like (a field it lacks is left as written)."""
    if not instruction:
        return messages
    if fields:
        instruction = Template(instruction).safe_substitute(fields)
    if messages and messages[0][0] == "system":
        return ((("system", f"{messages[0][1]}\n\n{instruction}"),) + tuple(messages[1:]))
    return (("system", instruction),) + tuple(messages)
