"""Every Parquet table of the pipeline: its schema, its sort key, and validated I/O.

Stages write through ``write_table`` (cast to the schema, sort by key, provenance in
the file metadata, atomic rename) and read through ``read_table`` (schema checked), so
a table that does not match its declaration fails at the stage boundary, by name.

Every stored table also carries the keys that identify its rows in a run (:data:`KEYS`):
``write_table`` sets those the table does not declare from where it is written, so one
``pl.scan_parquet`` glob reads a table of a whole run with no path parsing (docs/analysis.md
"Reading a whole run"). ``read_table`` returns the declared columns, as stages expect them.

Schemas are polars types and the I/O is polars' own Parquet reader and writer: a job
never imports pyarrow (0.17 s CPU of a job's ~0.4 s floor), and the files are
the same Arrow-typed Parquet any reader opens.
"""
from __future__ import annotations

import json
import os
from itertools import product, repeat
from math import prod
from operator import is_not
from typing import Any, Iterable

import polars as pl

from . import __version__, layout
from .atomic import replacing

_str, _int, _f64, _bool = pl.String, pl.Int64, pl.Float64, pl.Boolean
_strs = pl.List(_str)


def _struct(fields: list[tuple[str, pl.DataType]]) -> pl.Struct:
    return pl.Struct(dict(fields))


# The keys of a row in a run, in every stored table: backbone = the model (a replicate's results folder,
# {model}/seed{s}, gives both backbone and replicate); replicate = the seed of config `seeds`, null in a run
# without replicates (not "seed": that names a model call's own sampling seed in the call tables); dataset =
# the configured dataset (a shard's tables name the dataset it is a shard of); method. Null where the table's
# location names none (a judge's battery, a table written outside results/).
KEYS = pl.Schema([("backbone", pl.String), ("replicate", pl.Int64), ("dataset", pl.String), ("method", pl.String)])

# Columns every model-call row carries, for cost accounting.
_CALL = [("prompt_tokens", _int), ("completion_tokens", _int), ("finish_reason", _str), ("cached", _bool)]

TABLES: dict[str, tuple[pl.Schema, list[str]]] = {
    # one benchmark question in canonical form (rule prepare_data)
    "questions": (pl.Schema([
        # dataset: the config's name for it; benchmark: its type, which decides scoring
        ("qid", _str), ("dataset", _str), ("benchmark", _str), ("question", _str),
        ("context", pl.List(_struct([("title", _str), ("sentences", _strs)]))),
        ("answer", _str), ("aliases", _strs), ("qtype", _str),
        # paragraph: index of the supporting paragraph in context (titles repeat in MuSiQue)
        ("supporting_facts", pl.List(_struct([("title", _str), ("sent_id", _int), ("paragraph", _int)]))),
        ("source", _str),
        # how answers are read and scored (lmad.answers); choices: the options as shown, choice_order:
        # the source index of each shown option (a seeded shuffle; [] when shown as stored); survey: JSON
        # country -> option probabilities (opinion questions, "" otherwise)
        ("answer_type", _str), ("choices", _strs), ("choice_order", pl.List(_int)), ("survey", _str),
    ]), ["qid"]),
    # one solver call: an agent's free-form rationale and extracted answer
    "samples": (pl.Schema([
        ("qid", _str), ("stage", _str), ("round", _int), ("agent", _int), ("temperature", _f64), ("seed", _int),
        ("response", _str), ("answer", _str), ("answer_norm", _str), ("answer_method", _str), *_CALL,
    ]), ["qid", "stage", "round", "agent"]),
    # one method's final answer for one question, with its whole cost
    "predictions": (pl.Schema([
        ("qid", _str), ("dataset", _str), ("method", _str), ("prediction", _str), ("prediction_norm", _str),
        ("stop_reason", _str), ("stop_round", _int),
        ("calls", _int), ("prompt_tokens", _int), ("completion_tokens", _int),
    ]), ["method", "qid"]),
    # judge decision + official EM/F1 for one prediction; judge_correct is null when unscored
    "judgments": (pl.Schema([
        ("qid", _str), ("dataset", _str), ("method", _str), ("prediction", _str), ("gold", _str), ("aliases", _strs),
        ("judge_model", _str), ("judge_verdict", _str), ("judge_correct", _f64), ("judge_raw", _str),
        # correct: the answer type's own decision (official EM > 0 for spans and yes/no; numeric, expression
        # or letter equivalence otherwise, judge_verdict "rule"; null where there is no gold, as for opinions)
        ("correct", _bool), ("em", _f64), ("f1", _f64), *_CALL,
    ]), ["method", "qid"]),
    # one known-answer battery item judged by the run's judge (rule judge_validation): expected = a
    # correct judge says "correct"; kind = how the candidate was made (lmad.judge_battery)
    "judge_battery": (pl.Schema([
        ("dataset", _str), ("qid", _str), ("item", _int), ("kind", _str), ("expected", _bool), ("candidate", _str),
        ("gold", _str), ("judge_model", _str), ("judge_verdict", _str), ("judge_raw", _str), *_CALL,
    ]), ["dataset", "qid", "item"]),
    # the judge's validation result: recall on each side, the two-sided floor, pass/fail and why
    "judge_validation": (pl.Schema([
        ("judge_model", _str), ("n_correct_items", _int), ("n_incorrect_items", _int), ("tpr", _f64), ("tnr", _f64),
        ("balanced_acc", _f64), ("n_unscored", _int), ("unscored_rate", _f64), ("min_recall", _f64),
        ("passed", _bool), ("reason", _str),
    ]), ["judge_model"]),
    # per-backbone accuracy summary (rule analyze); judge_acc counts unscored replies as incorrect,
    # judge_em_kappa = Cohen's κ between judge verdicts and EM on the cell's predictions
    "accuracy": (pl.Schema([
        ("backbone", _str), ("dataset", _str), ("method", _str), ("n", _int), ("n_unscored", _int),
        ("judge_acc", _f64), ("em", _f64), ("f1", _f64), ("judge_em_kappa", _f64),
        ("calls_per_q", _f64), ("prompt_tokens_per_q", _f64), ("completion_tokens_per_q", _f64),
    ]), ["backbone", "dataset", "method"]),
    # a backbone's calls and tokens split by the model that made them (rule costs_by_model): per dataset and
    # method, each model's share; a committee's members and role models (lmad.committees), a single model's one row
    "costs_by_model": (pl.Schema([
        ("backbone", _str), ("dataset", _str), ("method", _str), ("model", _str),
        ("calls", _int), ("prompt_tokens", _int), ("completion_tokens", _int),
    ]), ["dataset", "method", "model"]),
    # one backbone's headline accuracy across its seeded replicates (rule replicates): per replicate
    # (seeds, values: fractions in seed order), the mean and the sample SD (null for one replicate);
    # dataset "Avg." is each replicate's macro-average over the datasets
    "replicates": (pl.Schema([
        ("backbone", _str), ("dataset", _str), ("method", _str), ("metric", _str), ("seeds", pl.List(_int)),
        ("values", pl.List(_f64)), ("n_replicates", _int), ("mean", _f64), ("sd", _f64),
    ]), ["backbone", "method", "dataset"]),
    # ---- LMAD (lmad.protocols.localized_debate): one table per stage per iteration, then the trace ----
    # one agent's chain of a disagreeing question: extractor output, quality flags, fallback
    "lmad_chains": (pl.Schema([
        ("qid", _str), ("iteration", _int), ("agent", _int), ("answer", _str), ("answer_norm", _str),
        ("rationale", _str), ("raw_output", _str), ("parse_error", _str), ("raw_nodes", _strs),
        ("node_flags", pl.List(_strs)), ("nodes", _strs), ("fallback", _str),
        # graph LMAD (lmad-dag; protocols.localized_debate.premises): per node its one-based premises and passage
        # (0 = none); graph_fallback "" or why the graph fell back to the chain. A chain method: [], [], ""
        ("premises", pl.List(pl.List(_int))), ("sources", pl.List(_int)), ("graph_fallback", _str),
        ("graph_detail", _str), *_CALL,
    ]), ["qid", "iteration", "agent"]),
    # conflict localization of one question: δ, one-based witness per agent (+ fallbacks), segments
    "lmad_localizations": (pl.Schema([
        ("qid", _str), ("iteration", _int), ("conflict", _str), ("conflict_fallback", _bool),
        ("witness", pl.List(_int)), ("witness_fallback", _strs), ("witness_claims", _strs),
        ("segments", pl.List(_strs)), ("raw_output", _str), ("parse_error", _str),
        # per agent every witness (one per conflict) and its segment's one-based claims; one description per
        # conflict (graph LMAD resolves up to lmad.graph.max_conflicts at once; a chain: one, its prefix)
        ("witnesses", pl.List(pl.List(_int))), ("segment_indices", pl.List(pl.List(_int))), ("conflicts", _strs),
        *_CALL,
    ]), ["qid", "iteration"]),
    # one agent's turn in one local-debate round
    "lmad_positions": (pl.Schema([
        ("qid", _str), ("iteration", _int), ("round", _int), ("agent", _int), ("temperature", _f64),
        ("seed", _int), ("position", _str), ("position_source", _str), ("response", _str), *_CALL,
    ]), ["qid", "iteration", "round", "agent"]),
    # the resolver's proposed repair: replacement nodes and supporting quotations
    "lmad_repairs": (pl.Schema([
        ("qid", _str), ("iteration", _int), ("nodes", _strs), ("quotes", _strs), ("raw_output", _str),
        ("parse_error", _str), *_CALL,
    ]), ["qid", "iteration"]),
    # the backbone's yes/no on whether a repair keeps the question's subject and relation (one per repair
    # with a claim; commit_guard "relation_model")
    "lmad_relations": (pl.Schema([
        ("qid", _str), ("iteration", _int), ("verdict", _str), ("raw_output", _str), ("parse_error", _str), *_CALL,
    ]), ["qid", "iteration"]),
    # the controller's decision for one question active in an iteration: guard checks, admission, stop
    "lmad_commits": (pl.Schema([
        ("qid", _str), ("iteration", _int), ("policy", _str), ("answers", _strs), ("agreed", _bool),
        ("repair_nodes", _strs), ("quotes", _strs),
        ("checks", pl.List(_struct([("check", _str), ("passed", _bool), ("required", _bool), ("detail", _str)]))),
        ("admitted", _bool), ("committed", _strs), ("stop_reason", _str), ("prediction", _str),
    ]), ["qid", "iteration"]),
    # every question's state after an iteration: the next iteration's input
    "lmad_state": (pl.Schema([
        ("qid", _str), ("active", _bool), ("committed", _strs), ("stop_reason", _str),
        ("stop_iteration", _int), ("prediction", _str), ("prediction_norm", _str),
    ]), ["qid"]),
    # one row per question per iteration it was active in: what a trace viewer and figures read
    "lmad_trace": (pl.Schema([
        ("qid", _str), ("dataset", _str), ("method", _str), ("iteration", _int), ("committed_before", _strs),
        ("answers", _strs), ("agreed", _bool), ("chains", pl.List(_strs)), ("chain_fallbacks", _strs),
        ("conflict", _str), ("witness", pl.List(_int)), ("witness_fallback", _strs),
        ("segments", pl.List(_strs)), ("positions", pl.List(_strs)), ("repair_nodes", _strs),
        ("quotes", _strs),
        ("checks", pl.List(_struct([("check", _str), ("passed", _bool), ("required", _bool), ("detail", _str)]))),
        ("admitted", _bool), ("committed_after", _strs), ("stop_reason", _str), ("prediction", _str),
        ("calls", _int), ("prompt_tokens", _int), ("completion_tokens", _int),
        # every call of the row by role (solver, extractor, localizer, debater, resolver, relation), with
        # its finish reason; final_iteration: ℓ = L − 1, after which no regeneration can follow
        ("call_log", pl.List(_struct([("role", _str), ("agent", _int), ("finish_reason", _str),
                                         ("prompt_tokens", _int), ("completion_tokens", _int)]))),
        ("final_iteration", _bool),
        # graph LMAD: each agent's premises and sources per node, graph fallbacks, every witness, the
        # segments' claim indices and the conflicts (a chain method: empty premises, its prefixes)
        ("premises", pl.List(pl.List(pl.List(_int)))), ("sources", pl.List(pl.List(_int))),
        ("graph_fallbacks", _strs), ("witnesses", pl.List(pl.List(_int))),
        ("segment_indices", pl.List(pl.List(_int))), ("conflicts", _strs),
    ]), ["method", "qid", "iteration"]),
    # ---- debate baselines (lmad.protocols.debate): per round, `samples` + these two ----
    # every call of a round that is not an agent's answer: advice / note / self_critique (agent = author,
    # target = recipient), manner steps (e.g. stepback_concept), judge / moderator (agent = -1; parsed =
    # {"decided", "answer"} JSON or "", parse_error = why the strict parse failed)
    "debate_steps": (pl.Schema([
        ("qid", _str), ("round", _int), ("step", _str), ("agent", _int), ("target", _int), ("slot", _int),
        ("temperature", _f64), ("seed", _int), ("response", _str), ("parsed", _str), ("parse_error", _str), *_CALL,
    ]), ["qid", "round", "step", "agent", "target", "slot"]),
    # every question after a round: still debating, or stopped with reason, round and answer
    "debate_state": (pl.Schema([
        ("qid", _str), ("round", _int), ("active", _bool), ("stop_reason", _str), ("stop_round", _int),
        ("prediction", _str), ("prediction_norm", _str),
    ]), ["qid"]),
    # ---- finalizers (lmad.studies.finalizers.finalize): one method's agents' answers after one round, read out by one
    # finalizer (round-level controls). answers_round: the round the answers come from (a question that
    # stopped earlier keeps its stop round's); candidates / counts: distinct non-empty answers in vote order;
    # evidence / scores / details: lvd's per candidate; replies: the finalizer's own calls (judge or verifier)
    "finalized": (pl.Schema([
        ("qid", _str), ("dataset", _str), ("method", _str), ("round", _int), ("answers_round", _int),
        ("finalizer", _str), ("answers", _strs), ("candidates", _strs), ("counts", pl.List(_int)), ("vote", _str),
        ("tie", _bool), ("evidence", pl.List(_bool)), ("scores", pl.List(_f64)), ("replies", _strs),
        ("details", _strs), ("finish_reasons", _strs), ("parse_error", _str), ("prediction", _str),
        ("prediction_norm", _str), ("source", _str), ("calls", _int), ("prompt_tokens", _int),
        ("completion_tokens", _int),
    ]), ["method", "qid", "round", "finalizer"]),
    # ---- coverage-selected societies (lmad.societies) ----
    # each question's place in its benchmark's construction split (rule society_split, config
    # societies.split): rank in the benchmark's seeded ranking, split: construction | evaluation
    "society_split": (pl.Schema([
        ("benchmark", _str), ("dataset", _str), ("qid", _str), ("rank", _int), ("split", _str),
    ]), ["benchmark", "rank"]),
    # one pool agent's answer to one question (rule society_pool); split: construction | evaluation;
    # perturb_seed is null for an unperturbed agent; correct = EM against answer + aliases
    "society_pool": (pl.Schema([
        ("qid", _str), ("dataset", _str), ("split", _str), ("agent", _int), ("agent_name", _str),
        ("temperature", _f64), ("persona", _str), ("variant", _str), ("perturb_seed", _int), ("perturb_scale", _f64),
        ("seed", _int), ("response", _str), ("answer", _str), ("answer_norm", _str), ("answer_method", _str),
        ("answer_type", _str), ("correct", _bool), *_CALL,
    ]), ["agent", "dataset", "qid"]),
    # the agents each selector picked (rule society_select), in pick order, for each dataset (a benchmark's
    # datasets share its society; constructed_on: the benchmark whose construction split picked it);
    # marginal = construction questions the agent newly covered (greedy selectors), selection_accuracy /
    # _support its scores there
    "society_members": (pl.Schema([
        ("dataset", _str), ("benchmark", _str), ("constructed_on", _str), ("selector", _str), ("rank", _int),
        ("agent", _int), ("agent_name", _str), ("temperature", _f64),
        ("persona", _str), ("variant", _str), ("perturb_seed", _int), ("perturb_scale", _f64), ("marginal", _int),
        ("selection_accuracy", _f64), ("selection_support", _f64),
    ]), ["dataset", "selector", "rank"]),
    # each selected society on each split: proposal hit, majority vote, mean member accuracy (%), its
    # coverage under both objectives, and its cost per question (one call per member)
    "society_eval": (pl.Schema([
        ("benchmark", _str), ("constructed_on", _str), ("construction_size", _int), ("selector", _str),
        ("split", _str), ("size", _int), ("n", _int), ("hit", _f64), ("vote", _f64),
        ("member_acc", _f64), ("ac_coverage", _int), ("sc_coverage", _int), ("calls_per_q", _f64),
        ("completion_tokens_per_q", _f64),
    ]), ["construction_size", "benchmark", "selector", "split"]),
    # ---- disagreement layers (lmad.studies.disagreement; docs/studies.md "Disagreement layers") ----
    # layer B's authored battery item judged: kind rebuttal | endorsement, expected stance, the judge's
    # parsed stance / move ("" when the reply did not parse; parse_error says why)
    "pushback_battery": (pl.Schema([
        ("dataset", _str), ("qid", _str), ("item", _int), ("kind", _str), ("variant", _int), ("expected", _str),
        ("parent", _str), ("reply", _str), ("judge_model", _str), ("stance", _str), ("move", _str),
        ("raw", _str), ("parse_error", _str), *_CALL,
    ]), ["dataset", "qid", "item"]),
    # layer B's validation: recall on rebuttals and on endorsements, the two-sided floor, pass/fail and why
    "pushback_validation": (pl.Schema([
        ("judge_model", _str), ("n_rebuttals", _int), ("n_endorsements", _int), ("rebuttal_recall", _f64),
        ("endorsement_recall", _f64), ("n_unparsed", _int), ("min_recall", _f64), ("passed", _bool),
        ("reason", _str),
    ]), ["judge_model"]),
    # layer B's label of one debate reply (round >= 1) of one method (a toned variant is its own method);
    # iteration: the LMAD iteration of a local-debate reply, 0 for a debate method's
    "pushback_labels": (pl.Schema([
        ("dataset", _str), ("method", _str), ("qid", _str), ("iteration", _int), ("round", _int), ("agent", _int),
        ("parent", _str), ("reply", _str), ("judge_model", _str), ("stance", _str), ("move", _str), ("raw", _str),
        ("parse_error", _str), *_CALL,
    ]), ["dataset", "method", "qid", "iteration", "round", "agent"]),
    # the process metrics' rubric scores (1-10, null when the reply did not parse) of one debate reply
    # (lmad.studies.process.metrics)
    "process_scores": (pl.Schema([
        ("dataset", _str), ("method", _str), ("qid", _str), ("iteration", _int), ("round", _int), ("agent", _int),
        ("judge_model", _str), ("rp", _int), ("ei", _int), ("nc", _int), ("raw", _str), ("parse_error", _str),
        *_CALL,
    ]), ["dataset", "method", "qid", "iteration", "round", "agent"]),
    # one authored reply of the rubric's known-answer battery (lmad.studies.process.metrics.build_rubric_battery): written to
    # score high or low on one dimension, and the judge's scores of it (null when the reply did not parse)
    "rubric_battery": (pl.Schema([
        ("dataset", _str), ("qid", _str), ("dimension", _str), ("kind", _str), ("parent", _str), ("own", _str),
        ("reply", _str), ("judge_model", _str), ("rp", _int), ("ei", _int), ("nc", _int), ("raw", _str),
        ("parse_error", _str), *_CALL,
    ]), ["dataset", "qid", "dimension", "kind"]),
    # the rubric judge's validation: per dimension, recall on the high and on the low items; pass/fail and why
    "rubric_validation": (pl.Schema([
        ("judge_model", _str), ("n_items", _int), ("n_unparsed", _int), ("min_recall", _f64), ("rp_high", _f64),
        ("rp_low", _f64), ("ei_high", _f64), ("ei_low", _f64), ("nc_high", _f64), ("nc_low", _f64),
        ("passed", _bool), ("reason", _str),
    ]), ["judge_model"]),
    # one juror's reply on one ordering of one pair (lmad.studies.jury.verdicts): kind pair (methods A vs B) |
    # battery (a known-better text as A vs its degradation as B, tier severe | moderate | subtle; "" on a pair);
    # order 0 shows A first;
    # choice 1 | 2 | tie | "" (unparsable; in the sub-score mode derived from the sums); winner a | b | tie | "";
    # a_scores / b_scores: the sub-scores (coverage, steelmanning, commitment, soundness) of A and B, null in the
    # choice mode and on a fallback; parse_error: why the reply was a fallback ("" when parsed)
    "jury_verdicts": (pl.Schema([
        ("dataset", _str), ("qid", _str), ("kind", _str), ("tier", _str), ("order", _int), ("judge_model", _str),
        ("a", _str), ("b", _str), ("raw", _str), ("choice", _str), ("winner", _str), ("a_scores", pl.List(_int)),
        ("b_scores", pl.List(_int)), ("parse_error", _str), *_CALL,
    ]), ["kind", "dataset", "qid", "tier", "order"]),
    # layer D (lmad.studies.disagreement.probe): one read of one probe cell (a debater's round-0 answer vs the first
    # peer answering otherwise) in one condition (prior | treat | control): the seven letters' log-probabilities
    # (null when not measured: ``error`` says why), their mass, the renormalized distribution, E and |E - 4|
    "probe_reads": (pl.Schema([
        ("dataset", _str), ("qid", _str), ("agent", _int), ("opponent", _int), ("proposition", _str),
        ("argument_words", _int), ("condition", _str), ("logprobs", pl.List(_f64)), ("mass", _f64),
        ("dist", pl.List(_f64)), ("expected", _f64), ("margin", _f64), ("degenerate", _bool), ("error", _str),
    ]), ["dataset", "qid", "agent", "condition"]),
    # layer A on LMAD's local debate: one turn's self-report, asked after the turn in its own conversation
    # (parsed = {"agreement", "changed_mind"} JSON or "", parse_error = why the strict parse failed)
    # step: self_report (layer A) | persist_removed | persist_kept (layer C: the label re-asked with the tone
    # instruction deleted / kept, a seeded share of a toned method's turns)
    "lmad_self_reports": (pl.Schema([
        ("dataset", _str), ("method", _str), ("qid", _str), ("iteration", _int), ("round", _int), ("agent", _int),
        ("step", _str), ("temperature", _f64), ("seed", _int), ("response", _str), ("parsed", _str),
        ("parse_error", _str), *_CALL,
    ]), ["dataset", "method", "qid", "iteration", "round", "agent", "step"]),
    # ---- opinion questions (lmad.studies.opinion.stages): no gold, so no accuracy ----
    # one method's answers on one opinion dataset vs every surveyed country's answers: source agents (its
    # final round's agents / samples) | prediction; similarity = mean 1 − Jensen–Shannon distance (base 2)
    # over every (valid question, country) pair; best / worst: by each country's mean over its questions
    "opinion": (pl.Schema([
        ("backbone", _str), ("dataset", _str), ("method", _str), ("source", _str), ("n", _int), ("n_valid", _int),
        ("n_countries", _int), ("similarity", _f64), ("best_country", _str), ("best_similarity", _f64),
        ("worst_country", _str), ("worst_similarity", _f64),
    ]), ["backbone", "dataset", "method"]),
}


# the keys each table does not declare itself, set by write_table from where the table is written
_LOCATED = {name: [k for k in KEYS if k not in schema] for name, (schema, _) in TABLES.items()}
# what a file holds: the declared columns, then the located keys
STORED = {name: pl.Schema([*schema.items(), *((k, KEYS[k]) for k in _LOCATED[name])])
          for name, (schema, _) in TABLES.items()}
_NESTED = {name: any(dtype.is_nested() for dtype in schema.dtypes()) for name, (schema, _) in TABLES.items()}
# a nested value as JSON for polars to decode (NaN has no JSON: such a column takes from_dicts)
_nested_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


# the Python types a value of a leaf type may have for JSON decoding to read it as from_dicts does
_LEAF_TYPES = {pl.String: (str,), pl.Int64: (int,), pl.Float64: (float, int), pl.Boolean: (bool,)}


def _shape_check(dtype: pl.DataType):
    """A predicate: is a Python value plainly of ``dtype`` (lists where it has lists, dicts where
    it has structs, leaves of the leaf's Python type; None anywhere)? JSON decoding is laxer
    than from_dicts (it reads "abc" as ["abc"] and 2.5 as "2.5"), so any other value must take
    from_dicts, which decides as before."""
    if isinstance(dtype, pl.List):
        leaf = _LEAF_TYPES.get(dtype.inner)
        if leaf is not None:
            # a list of leaves, the commonest shape: its element types as a set, in C
            allowed = {type(None), *leaf}
            return lambda v: v is None or type(v) in (list, tuple) and set(map(type, v)) <= allowed
        inner = _shape_check(dtype.inner)
        return lambda v: v is None or type(v) in (list, tuple) and all(map(inner, v))
    if isinstance(dtype, pl.Struct):
        leaves = [_LEAF_TYPES.get(f.dtype) for f in dtype.fields]
        if all(leaves) and prod(len(t) + 1 for t in leaves) <= 1024:
            # a record of leaves (a call log entry): its fields' types against every allowed combination
            names, combos = [f.name for f in dtype.fields], set(product(*({type(None), *t} for t in leaves)))
            return lambda v: v is None or type(v) is dict and tuple(map(type, map(v.get, names))) in combos
        fields = [(f.name, _shape_check(f.dtype)) for f in dtype.fields]
        return lambda v: v is None or type(v) is dict and all(check(v.get(k)) for k, check in fields)
    leaf = _LEAF_TYPES.get(dtype)
    if leaf is None:
        return lambda v: v is None
    return lambda v: v is None or type(v) in leaf


def _nested_column(column: str, dtype: pl.DataType, values: list) -> pl.Series | None:
    """A nested column decoded from JSON in Rust; from_dicts builds a Python-side Series per
    nested value (the 4,858 rows of four LMAD traces: 0.59 s by from_dicts, 0.38 s this way,
    shape checks included). None where the values are not plainly of the column's shape or do
    not decode: from_dicts then decides."""
    if not all(map(_shape_check(dtype), values)):
        return None
    try:
        # the whole column as one JSON array, decoded as one list value: one encoder call
        whole = pl.Series(column, [_nested_json(values)], dtype=pl.String).str.json_decode(pl.List(dtype))
        return whole[0].rename(column)
    except (TypeError, ValueError, pl.exceptions.PolarsError):
        return None


def _frame_from_columns(schema: pl.Schema, columns: dict[str, list]) -> pl.DataFrame:
    """The table built column by column: flat columns strictly from lists, nested ones from JSON,
    or by from_dicts where JSON can't be used (that column alone: from_dicts over every column would
    turn 2.5 into "2.5" in a flat string column, which the strict flat path refuses)."""
    series = []
    for column, dtype in schema.items():
        values = columns[column]
        if not dtype.is_nested():
            series.append(pl.Series(column, values, dtype=dtype, strict=True))
            continue
        nested = _nested_column(column, dtype, values)
        if nested is None:
            nested = pl.from_dicts([{column: v} for v in values], schema={column: dtype}, strict=True).to_series()
        series.append(nested)
    return pl.DataFrame(series)


class SchemaError(ValueError):
    """A table does not match its declared schema."""


def _table_spec(name: str) -> tuple[pl.Schema, list[str]]:
    try:
        return TABLES[name]
    except KeyError:
        raise SchemaError(f"unknown table {name!r}; declared tables: {sorted(TABLES)}") from None


def _lost_values(name: str, columns: dict[str, list], frame: pl.DataFrame) -> None:
    """polars turns a value it cannot hold in its column's type (2.5 in an Int64 column)
    into null where pyarrow raised: a column with fewer values than its rows gave fails."""
    nulls = frame.null_count().row(0, named=True)
    for column, values in columns.items():
        if sum(map(is_not, values, repeat(None))) != frame.height - nulls[column]:
            bad = next(v for v in values if v is not None)
            raise SchemaError(f"table {name!r}: column {column!r} ({frame.schema[column]}) cannot hold "
                              f"some of its values, e.g. {bad!r}")


def to_frame(name: str, rows: pl.DataFrame | Iterable[dict[str, Any]]) -> pl.DataFrame:
    """``rows`` (a frame or dicts) as table ``name``: its columns, types and sort order."""
    schema, key = _table_spec(name)
    if isinstance(rows, pl.DataFrame):
        # a frame read with its keys may keep them: write_table sets them from where it writes
        have, want = set(rows.columns) - set(_LOCATED[name]), set(schema.names())
        if have != want:
            raise SchemaError(f"table {name!r}: missing columns {sorted(want - have)}, "
                              f"unexpected columns {sorted(have - want)}")
        try:
            frame = rows[schema.names()]
            if frame.schema != schema:
                frame = frame.cast(dict(schema))
        except (pl.exceptions.InvalidOperationError, pl.exceptions.ComputeError,
                pl.exceptions.SchemaError) as err:
            raise SchemaError(f"table {name!r}: {err}") from err
    else:
        rows = rows if isinstance(rows, list) else list(rows)
        try:
            columns = {column: [row.get(column) for row in rows] for column in schema.names()}
            # flat columns build fastest from lists, nested ones (lists, structs) from JSON
            frame = (_frame_from_columns(schema, columns) if _NESTED[name] and rows
                     else pl.DataFrame(columns, schema=schema, strict=True))
        except (TypeError, ValueError, AttributeError, pl.exceptions.PolarsError) as err:
            raise SchemaError(f"table {name!r}: {err}") from err
        _lost_values(name, columns, frame)
    # nulls last and ties in input order, as Arrow's sort did (a row alone needs no sort: each
    # eager polars call that goes through the lazy engine costs ~0.14 ms, most of a small table's write)
    return frame.sort(key, nulls_last=True, maintain_order=True) if frame.height > 1 else frame


def keys_of(path: str | os.PathLike) -> dict[str, Any]:
    """The key values (:data:`KEYS`) of a table written at ``path``: its coordinates in the results
    layout (lmad.layout builds every rule's output paths from the job's wildcards; a job that writes
    every dataset or method in one batch has no wildcard for them, its paths alone say which).
    All None outside that layout."""
    where = None
    if layout.in_results(path):
        try:
            where = layout.parse(path)
        except ValueError:  # results/judge/…, results/paper/…: no backbone, dataset or method
            pass
    run = where and where.backbone
    return {"backbone": run and layout.model_of(run), "replicate": run and layout.replicate_of(run),
            "dataset": where and where.dataset and layout.configured_dataset(where.dataset),
            "method": where and where.method}


def _keyed(name: str, frame: pl.DataFrame, path: str | os.PathLike) -> pl.DataFrame:
    """Table ``name`` as stored: the keys it does not declare from ``path``; a declared backbone that
    is a replicate's run (``model/seed{s}``, as a replicate's analysis names it) split into backbone
    and replicate, so that a key means the same in every table."""
    where = keys_of(path)
    if "backbone" in _LOCATED[name]:  # every key from the path
        return _with_keys(name, frame, where)
    keys = {k: pl.lit(where[k], dtype=KEYS[k]) for k in _LOCATED[name]}
    runs = [r for r in frame["backbone"].unique().drop_nulls() if layout.replicate_of(r) is not None]
    if runs:
        keys["backbone"] = pl.col("backbone").replace({r: layout.model_of(r) for r in runs})
        keys["replicate"] = pl.coalesce(keys["replicate"], pl.col("backbone").replace_strict(
            {r: layout.replicate_of(r) for r in runs}, default=None, return_dtype=pl.Int64))
    return frame.with_columns(**keys).select(STORED[name].names())


def _with_keys(name: str, frame: pl.DataFrame, keys: dict[str, Any]) -> pl.DataFrame:
    """``frame`` (declared columns) as stored, every key it does not declare set to ``keys``' value:
    columns built directly, not through polars' lazy engine (~0.14 ms a call, most of a small write)."""
    located = [pl.Series(k, [keys[k]] * frame.height, dtype=KEYS[k]) for k in _LOCATED[name]]
    return frame.hstack(located)[STORED[name].names()]


def write_table(name: str, rows, path: str | os.PathLike, provenance: dict[str, Any] | None = None) -> pl.DataFrame:
    """Validate, sort and atomically write a table with its keys and provenance metadata; returns
    it as ``read_table`` will."""
    schema, _ = _table_spec(name)
    frame = _keyed(name, to_frame(name, rows), path)
    _write(name, frame, path, provenance)
    return frame[schema.names()]


def _write(name: str, frame: pl.DataFrame, path: str | os.PathLike, provenance: dict[str, Any] | None) -> None:
    """A stored table written atomically, its provenance in the file metadata."""
    meta = {"table": name, "package_version": __version__, **(provenance or {})}
    with replacing(path) as tmp:
        frame.write_parquet(tmp, metadata={"lmad": json.dumps(meta, sort_keys=True)})


def write_units(name: str, parts: list[tuple[str, str, Any]], path: str | os.PathLike,
                provenance: dict[str, Any] | None = None) -> None:
    """One table of several (dataset, method) units in one file (an LMAD iteration's stage table:
    lmad.layout.lmad_iteration): each unit's ``rows`` (``parts``: (dataset, method, rows), in
    order) validated and sorted as ``write_table`` does, its dataset and method keys its own, the
    other keys from ``path``: one file, where a file per unit costs each a Parquet read and write
    (~1 ms each) and Snakemake one more file to match. ``read_units`` splits it again."""
    _table_spec(name)
    if len(_LOCATED[name]) != len(KEYS):
        raise SchemaError(f"table {name!r} declares some of its keys: it cannot hold units")
    base = keys_of(path)
    frames = [_with_keys(name, to_frame(name, rows), {**base, "dataset": layout.configured_dataset(dataset),
                                                      "method": method}) for dataset, method, rows in parts]
    frame = pl.concat(frames, how="vertical") if frames else _with_keys(name, to_frame(name, []), base)
    _write(name, frame, path, provenance)


def _split_units(name: str, frame: pl.DataFrame, extra: tuple[str, ...] = ()) -> dict[tuple[str, str], pl.DataFrame]:
    """{(dataset, method): its rows} of ``frame`` (table ``name`` with its key columns), as frames of
    the declared columns and ``extra``."""
    if not frame.height:
        return {}
    cols = [*_table_spec(name)[0].names(), *extra]
    return {unit: part.select(cols)
            for unit, part in frame.partition_by(["dataset", "method"], as_dict=True, maintain_order=True).items()}


def frames_by_unit(name: str, path: str | os.PathLike) -> dict[tuple[str, str], pl.DataFrame]:
    """{(dataset, method): its rows} of a file ``write_units`` wrote, as frames of the declared columns."""
    return _split_units(name, read_table(name, path, keys=True))


def rows_by_unit(name: str, path: str | os.PathLike) -> dict[tuple[str, str], list[dict]]:
    """``frames_by_unit``'s rows as dicts."""
    return {unit: part.to_dicts() for unit, part in frames_by_unit(name, path).items()}


def read_units(name: str, path: str | os.PathLike, units: list[tuple[str, str]]) -> list[list[dict]]:
    """The rows of each (dataset, method) unit of ``units`` in a file ``write_units`` wrote; a unit
    without rows gets an empty list."""
    by_unit = rows_by_unit(name, path)
    return [by_unit.get((layout.configured_dataset(d), m), []) for d, m in units]


def read_unit_frames(name: str, path: str | os.PathLike, units: list[tuple[str, str]]) -> list[pl.DataFrame]:
    """``read_units`` as frames: a unit without rows gets an empty frame of the table's columns."""
    by_unit = frames_by_unit(name, path)
    empty = pl.DataFrame(schema=_table_spec(name)[0])
    return [by_unit.get((layout.configured_dataset(d), m), empty) for d, m in units]


def read_unit_files(name: str, paths: list[str], units: list[tuple[str, str]], index: str) -> list[pl.DataFrame]:
    """Each unit's rows of every file of ``paths`` (files ``write_units`` wrote: an LMAD stage
    table of each iteration) as one frame of the table's columns and ``index``, the file's position
    in ``paths``: every file read and the rows split by unit once, not once per file (each polars
    operation costs ~0.3 ms, and ``lmad_predict`` reads 60 such files for 24 units)."""
    by_unit = _split_units(name, stack([read_table(name, p, keys=True) for p in paths], index), (index,))
    empty = pl.DataFrame(schema={**_table_spec(name)[0], index: pl.Int64})
    return [by_unit.get((layout.configured_dataset(d), m), empty) for d, m in units]


def stack(frames: list[pl.DataFrame], index: str) -> pl.DataFrame:
    """``frames`` (one schema) one after another, each row with its frame's position in ``frames``
    as column ``index`` (Int64); none: an empty frame of that one column."""
    if not frames:
        return pl.DataFrame(schema={index: pl.Int64})
    positions = [k for k, f in enumerate(frames) for k in repeat(k, f.height)]
    return pl.concat(frames, how="vertical").with_columns(pl.Series(index, positions, dtype=pl.Int64))


def read_table(name: str, path: str | os.PathLike, keys: bool = False) -> pl.DataFrame:
    """Table ``name`` at ``path``, schema checked: its declared columns, with ``keys`` its key columns
    too. A table written before tables carried their keys reads as well, its keys from ``path``."""
    schema, _ = _table_spec(name)
    frame = pl.read_parquet(path)
    if frame.schema == schema:
        frame = _keyed(name, frame, path)
    elif frame.schema != STORED[name]:
        raise SchemaError(f"{path}: does not match table {name!r}:\n expected {STORED[name]}\n found {frame.schema}")
    return frame if keys else frame[schema.names()]


def read_columns(name: str, path: str | os.PathLike, columns: list[str]) -> pl.DataFrame:
    """Only ``columns`` of table ``name`` at ``path``, each checked against the table's declared type:
    a reader that sums a few columns of a wide table (an LMAD trace, a samples table with its texts)
    skips decoding the rest."""
    schema, _ = _table_spec(name)
    unknown = [c for c in columns if c not in schema]
    if unknown:
        raise SchemaError(f"table {name!r} has no columns {unknown}; declared: {schema.names()}")
    frame = pl.read_parquet(path, columns=list(columns))
    want = pl.Schema([(c, schema[c]) for c in columns])
    if frame.schema != want:
        raise SchemaError(f"{path}: does not match table {name!r}:\n expected {want}\n found {frame.schema}")
    return frame


def provenance_of(path: str | os.PathLike) -> dict[str, Any]:
    return json.loads(pl.read_parquet_metadata(path).get("lmad", "{}"))
