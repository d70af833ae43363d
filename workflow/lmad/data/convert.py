"""The canonical question record, and the multi-hop benchmarks' converters into it
(``lmad.data.benchmarks.record_from_raw`` converts a raw row by its benchmark's record).

Canonical record (a plain dict)::

    {"qid", "dataset", "benchmark", "question", "context": [{"title", "sentences"}], "answer",
     "aliases", "qtype", "supporting_facts": [{"title", "sent_id", "paragraph"}], "source",
     "answer_type", "choices", "choice_order", "survey"}

``answer_type`` is the benchmark's (``lmad.data.benchmarks``: how replies are read and scored);
``choices`` the option texts in the order shown to the model (``[]`` without options);
``choice_order[i]`` the source index of the option shown at position ``i`` (``[]`` when
shown as stored); ``survey`` GlobalOpinionQA's JSON object country -> one probability per
option ("" otherwise). This module converts the multi-hop benchmarks; ``lmad.data.tasks``
the math, multiple-choice, truthfulness and opinion ones (no passages: empty ``context``
and ``supporting_facts``); ``lmad.data.benchmarks`` registers each and builds the record.

``paragraph`` is the supporting paragraph's index in ``context``. MuSiQue repeats titles
(in 33 of 100 real dev questions another paragraph has a supporting paragraph's title), so
its supporting paragraphs are identified by position, never by title; HotpotQA and 2Wiki
facts point at the first paragraph with their title; a fact whose title or sentence is
not in the context is a ``DataError``.

Both each benchmark's original schema and its Hugging Face ``datasets`` shape are
accepted: HF copies store pair lists column-wise (``{"title": [...], "sentences": [...]}``,
2Wiki copies name the second column ``content``) and some copies JSON-encode nested
fields as strings.

Per-benchmark choices:

* Sentences are stripped of surrounding whitespace (HotpotQA keeps the space that
  followed the previous sentence); none are dropped, so ``sent_id`` still indexes them.
* MuSiQue paragraphs are kept as ONE sentence each. MuSiQue marks support per
  paragraph, so ``sent_id`` 0 then means "this whole paragraph"; splitting would make it
  point at the first sentence only, and a naive splitter breaks on "U.S." or "Dr.".
  ``qtype`` is the hop count from the id prefix ("3hop1__..." -> "3hop"); the digit after
  "hop" (the composition shape) stays visible in ``qid``.
* StrategyQA's facts become one paragraph titled "Facts". The facts are the annotated
  evidence for the answer, so every fact is a supporting fact. The decomposition is
  deliberately left out: it spells out the reasoning the agents must do themselves.
"""
from __future__ import annotations

import json
import re
from typing import Any, Callable

STRATEGYQA_TITLE = "Facts"

_CONTEXT_SHAPE = "expected a list of [title, sentences] pairs"
_FACTS_SHAPE = "expected a list of [title, sent_id] pairs"
_PARAGRAPH_SHAPE = "expected a list of {title, paragraph_text, is_supporting} objects"


class DataError(ValueError):
    """A raw record that does not follow its benchmark's schema."""


def _error(where: str, field: str, problem: str) -> DataError:
    return DataError(f"{where}: field '{field}': {problem}")


def _require(raw: dict, names: tuple[str, ...], where: str) -> tuple[str, Any]:
    """(name, value) of the first of ``names`` present; HF copies rename some ids."""
    for name in names:
        if raw.get(name) is not None:
            return name, raw[name]
    also = f" (also looked for {', '.join(repr(n) for n in names[1:])})" if names[1:] else ""
    raise _error(where, names[0], f"required field is missing{also}")


def _text(raw: dict, names: tuple[str, ...], where: str) -> str:
    name, value = _require(raw, names, where)
    if not isinstance(value, str):
        raise _error(where, name, f"expected a string, got {type(value).__name__}")
    if not value.strip():
        raise _error(where, name, "must not be empty")
    return value.strip()


def _decoded(value: Any, where: str, field: str) -> Any:
    """Nested fields arrive JSON-encoded in some HF copies; decode those."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        raise _error(where, field, "got a string that is not valid JSON") from None


def _rows_from_columns(columns: dict, keys: tuple[str, ...], where: str, field: str,
                       shape: str) -> list[dict]:
    """Turn HF's column-wise {key: [values]} into a list of {key: value} rows."""
    values = [columns.get(key) for key in keys]
    if not all(isinstance(v, list) for v in values) or len({len(v) for v in values}) > 1:
        raise _error(where, field, f"{shape} (or equal-length columns {list(keys)})")
    return [dict(zip(keys, row)) for row in zip(*values)]


def _pairs(raw: dict, field: str, keys: tuple[str, str], where: str, shape: str) -> list:
    """A list of [a, b] pairs, given as pairs, as HF columns or as a JSON string."""
    value = _decoded(_require(raw, (field,), where)[1], where, field)
    if isinstance(value, dict):
        if keys[1] not in value and "content" in value:  # 2Wiki HF copies
            value = {**value, keys[1]: value["content"]}
        value = [[row[k] for k in keys] for row in _rows_from_columns(value, keys, where, field, shape)]
    if not isinstance(value, list) or not all(
            isinstance(p, (list, tuple)) and len(p) == 2 for p in value):
        raise _error(where, field, shape)
    return value


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(s, str) for s in value)


def _context(raw: dict, where: str) -> list[dict]:
    pairs = _pairs(raw, "context", ("title", "sentences"), where, _CONTEXT_SHAPE)
    if not all(isinstance(t, str) and _is_str_list(s) for t, s in pairs):
        raise _error(where, "context", _CONTEXT_SHAPE)
    return [{"title": t, "sentences": [s.strip() for s in sents]} for t, sents in pairs]


def _supporting_facts(raw: dict, where: str) -> list[dict]:
    pairs = _pairs(raw, "supporting_facts", ("title", "sent_id"), where, _FACTS_SHAPE)
    # bool is an int subclass but never a sentence index.
    if not all(isinstance(t, str) and isinstance(i, int) and not isinstance(i, bool)
               for t, i in pairs):
        raise _error(where, "supporting_facts", _FACTS_SHAPE)
    return [{"title": t, "sent_id": i} for t, i in pairs]


def _aliases(raw: dict, answer: str, where: str) -> list[str]:
    """Other accepted answers: no blanks, no repeats, nothing equal to the answer."""
    value = _decoded(raw.get("answer_aliases") or [], where, "answer_aliases")
    if not _is_str_list(value):
        raise _error(where, "answer_aliases", "expected a list of strings")
    return merge_aliases(answer, value)


def merge_aliases(answer: str, value: list[str]) -> list[str]:
    seen, aliases = {answer.casefold()}, []
    for alias in (a.strip() for a in value):
        if alias and alias.casefold() not in seen:
            seen.add(alias.casefold())
            aliases.append(alias)
    return aliases


def _hotpot_like(raw: dict, where: str) -> dict:
    """HotpotQA and 2WikiMultiHopQA share one layout (2Wiki's extras but aliases are unused)."""
    answer = _text(raw, ("answer",), where)
    return {
        "qid": _text(raw, ("_id", "id"), where),
        "question": _text(raw, ("question",), where),
        "context": _context(raw, where),
        "answer": answer,
        # 2Wiki copies that carry their aliases inline; the official id_aliases.json file
        # is joined by answer_id in the loader (dataset setting aliases_path)
        "aliases": _aliases(raw, answer, where),
        "qtype": _text(raw, ("type",), where),
        "supporting_facts": _supporting_facts(raw, where),
    }


def _paragraphs(raw: dict, where: str) -> list[dict]:
    keys = ("title", "paragraph_text", "is_supporting")
    value = _decoded(_require(raw, ("paragraphs",), where)[1], where, "paragraphs")
    if isinstance(value, dict):
        value = _rows_from_columns(value, keys, where, "paragraphs", _PARAGRAPH_SHAPE)
    if not isinstance(value, list) or not all(
            isinstance(p, dict) and isinstance(p.get("title"), str)
            and isinstance(p.get("paragraph_text"), str)
            and isinstance(p.get("is_supporting"), bool) for p in value):
        raise _error(where, "paragraphs", _PARAGRAPH_SHAPE)
    return value


def _musique(raw: dict, where: str) -> dict:
    qid = _text(raw, ("id",), where)
    hops = re.match(r"(\d+)hop", qid)
    if not hops:
        raise _error(where, "id", f"expected an id like '2hop__...', got {qid!r}")
    paragraphs = _paragraphs(raw, where)
    answer = _text(raw, ("answer",), where)
    return {
        "qid": qid,
        "question": _text(raw, ("question",), where),
        "context": [{"title": p["title"], "sentences": [p["paragraph_text"].strip()]}
                    for p in paragraphs],
        "answer": answer,
        "aliases": _aliases(raw, answer, where),
        "qtype": f"{hops.group(1)}hop",
        "supporting_facts": [{"title": p["title"], "sent_id": 0, "paragraph": i}
                             for i, p in enumerate(paragraphs) if p["is_supporting"]],
    }


def _yes_no(raw: dict, where: str) -> str:
    value = _require(raw, ("answer",), where)[1]
    words = {"true": "yes", "false": "no", "yes": "yes", "no": "no"}
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str) and value.strip().lower() in words:
        return words[value.strip().lower()]
    raise _error(where, "answer", f"expected a boolean (or 'yes'/'no'), got {value!r}")


def _strategyqa(raw: dict, where: str) -> dict:
    facts = _decoded(_require(raw, ("facts",), where)[1], where, "facts")
    if not _is_str_list(facts):
        raise _error(where, "facts", "expected a list of strings")
    facts = [f.strip() for f in facts]
    return {
        "qid": _text(raw, ("qid",), where),
        "question": _text(raw, ("question",), where),
        "context": [{"title": STRATEGYQA_TITLE, "sentences": facts}] if facts else [],
        "answer": _yes_no(raw, where),
        "aliases": [],
        "qtype": "boolean",
        "supporting_facts": [{"title": STRATEGYQA_TITLE, "sent_id": i, "paragraph": 0} for i in range(len(facts))],
    }


_CONVERTERS: dict[str, Callable[[dict, str], dict]] = {
    "hotpotqa": _hotpot_like,
    "2wikimultihopqa": _hotpot_like,
    "musique": _musique,
    "strategyqa": _strategyqa,
}


def multihop_fields(benchmark: str) -> Callable[[dict, str, int], dict]:
    """The converter of a multi-hop benchmark (its registered ``convert``): no options, no survey."""
    convert = _CONVERTERS[benchmark]

    def fields(raw: dict, where: str, seed: int) -> dict:
        return convert(raw, where) | {"choices": [], "choice_order": [], "survey": ""}
    return fields


def check_facts(facts: list[dict], context: list[dict], where: str) -> None:
    """Every supporting fact names a paragraph of the context and one of its sentences: the
    LMAD guard and ``max_context_chars`` trimming rely on it, so a fact pointing elsewhere
    (a title absent from the context, sentence 99) is an error, not a silently dropped fact."""
    for i, fact in enumerate(facts):
        field = f"supporting_facts[{i}]"
        if not isinstance(fact["sent_id"], int) or isinstance(fact["sent_id"], bool):
            raise _error(where, field, f"sent_id {fact['sent_id']!r} is not an integer")
        if fact["paragraph"] is None:
            raise _error(where, field, f"title {fact['title']!r} is not a paragraph of the context")
        sentences = context[fact["paragraph"]]["sentences"]
        if not 0 <= fact["sent_id"] < len(sentences):
            raise _error(where, field, f"sent_id {fact['sent_id']} but paragraph {fact['title']!r} has "
                                       f"{len(sentences)} sentence(s)")


def musique_unanswerable(raw: Any, keep_all: bool, where: str) -> str | None:
    """MuSiQue-full rows flagged unanswerable have no answer to score; loaders skip them (MuSiQue's
    ``skip``, lmad.data.benchmarks)."""
    return "unanswerable {benchmark} rows" if isinstance(raw, dict) and raw.get("answerable") is False else None
