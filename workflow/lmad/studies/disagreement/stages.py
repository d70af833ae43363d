"""Rules of rules.smk (docs/studies.md "Disagreement layers"): layer B's validation on its
authored battery, layer B's labels of every debate reply (one batch per backbone), and the
disagreement table (layers A and B per method x tone x round). Layer A is asked inside the
debate rounds (``engine.self_reports``) and read here from their ``debate_steps`` tables."""
from __future__ import annotations

import logging
import random
from collections import defaultdict

import polars as pl

from lmad import layout
from lmad.atomic import write_csv, write_text
from lmad.backends import open_backend
from lmad.backends.batch import generate_by_backend
from lmad.call_accounting import call_columns
from lmad.disagreement_labels import (MEASUREMENT_STEPS, PERSIST_KEPT, PERSIST_REMOVED, SELF_REPORT_STEP, as_json,
                                      parse_pushback, parse_self_report, self_report_request)
from lmad.studies.disagreement.local import local_turns
from lmad.studies.disagreement.pushback import (battery_note, build_battery, pushback_request, replies_with_parents, validate,
                                                validation_line)
from lmad.studies.disagreement.tables import COLUMNS, disagreement_markdown, disagreement_rows, figure
from lmad.prompts import load_prompt
from lmad.registry import method as registered_method
from lmad.schemas import read_table, rows_by_unit, write_table
from lmad.solver import derive_seed
from lmad.societies import member_prompt
from lmad.tones import tone_role
from lmad.stages.judge import KnownAnswerBattery, validate_judge
from lmad.stages.society_agents import JobWeights, SocietyFile
from lmad.committees import crew

log = logging.getLogger(__name__)


def _stance(reply) -> dict:
    """Layer B's label of one reply, parsed strictly (empty when it did not parse)."""
    label, error = parse_pushback(reply.text)
    return {"stance": label["stance"] if label else "", "move": label["move"] if label else "", "raw": reply.text,
            "parse_error": error}


def pushback_validation(questions: list[str], prompt: str, battery: str, validation: str, report: str, model: dict,
                        judge_name: str, cache_dir: str, max_tokens: int, questions_per_dataset: int,
                        min_recall: float, seed: int, provenance: dict) -> None:
    """Judge the authored battery (lmad.studies.disagreement.pushback) in one batch with the exact
    request layer B sends; write every item, the two-sided verdict and its report."""
    validate_judge(KnownAnswerBattery(
        title="Pushback judge validation", tables=("pushback_battery", "pushback_validation"),
        build=lambda qs: build_battery(qs, questions_per_dataset, seed),
        request=lambda template, it: pushback_request(template, it.parent, it.reply, max_tokens),
        row=lambda i, it, reply: {"dataset": it.dataset, "qid": it.qid, "item": i, "kind": it.kind,
                                  "variant": it.variant, "expected": it.expected, "parent": it.parent,
                                  "reply": it.reply, **_stance(reply)},
        validate=validate, line=validation_line, table=_stances, note=battery_note),
        questions, prompt, model, judge_name, cache_dir, min_recall, battery, validation, report, provenance)


def _stances(rows: list[dict], summary: dict) -> list[str]:
    """The judge's stances on the rebuttals and on the endorsements."""
    lines = ["| Kind | Should be | Items | Judged agree | Judged partial | Judged disagree | Unparsable |",
             "|---|---|---|---|---|---|---|"]
    for kind, expected in (("rebuttal", "disagree"), ("endorsement", "agree")):
        mine = [r for r in rows if r["kind"] == kind]
        counts = [sum(r["stance"] == s for r in mine) for s in ("agree", "partial", "disagree", "")]
        lines.append(f"| {kind} | {expected} | {len(mine)} | " + " | ".join(map(str, counts)) + " |")
    return lines


def _iteration_rows(table: str, paths: list[str]) -> dict[tuple, list[dict]]:
    """(dataset, method, iteration) -> its rows of LMAD iteration files (one file of every unit per
    iteration: lmad.layout.lmad_iteration; the key columns name each row's unit)."""
    out: dict[tuple, list[dict]] = defaultdict(list)
    for path in paths:
        k = layout.parse(path).iteration
        for (dataset, method), rows in rows_by_unit(table, path).items():
            out[(dataset, method, k)] += rows
    return out


def _lmad_tables(localizations: list[str], positions: list[str]) -> dict[tuple, dict]:
    """(dataset, method, iteration) -> its localization and position rows."""
    out: dict[tuple, dict] = defaultdict(lambda: {"localizations": [], "positions": []})
    for kind, table, paths in (("localizations", "lmad_localizations", localizations),
                               ("positions", "lmad_positions", positions)):
        for unit, rows in _iteration_rows(table, paths).items():
            out[unit][kind] += rows
    return out


def debate_replies(rounds: list[str], lmad_localizations: list[str] | None,
                   lmad_positions: list[str] | None) -> list[tuple[str, str, int, dict]]:
    """(dataset, method, iteration, reply) of every debate reply of rounds t >= 1 of the debate
    methods' round ``samples`` tables and of every LMAD local-debate turn (iteration k; 0 for a
    debate method), each reply with its ``parent``: what layer B and the rubric judge read."""
    by_unit = defaultdict(list)
    for path in rounds:
        where = layout.parse(path)
        by_unit[(where.dataset, where.method)] += read_table("samples", path).to_dicts()
    out = []
    for (dataset, name), samples in sorted(by_unit.items()):
        out += [(dataset, name, 0, r) for r in replies_with_parents(registered_method(name).protocol, samples)]
    for (dataset, name, k), tables in sorted(_lmad_tables(lmad_localizations or [], lmad_positions or []).items()):
        out += [(dataset, name, k, t) for t in local_turns(None, "", {}, {}, tables["localizations"],
                                                           tables["positions"], 0)]
    return out


def pushback(rounds: list[str], prompt: str, labels: str, model: dict, judge_name: str, cache_dir: str,
             max_tokens: int, provenance: dict, lmad_localizations: list[str] | None = None,
             lmad_positions: list[str] | None = None) -> None:
    """Layer B on every debate reply of rounds t >= 1 of every debate method (toned variants
    included) and of LMAD's local debates, every dataset of one backbone, in ONE batch.
    ``rounds``: the debate methods' round ``samples`` tables; ``lmad_*``: every LMAD iteration's
    localization and debate tables (any order; each path names its dataset, method, round)."""
    jobs = [{"dataset": dataset, "method": name, "iteration": k,
             **{key: r[key] for key in ("qid", "round", "agent", "parent", "reply")}}
            for dataset, name, k, r in debate_replies(rounds, lmad_localizations, lmad_positions)]
    template = load_prompt(prompt)
    backend = open_backend(model, cache_dir) if jobs else None
    replies = backend.generate([pushback_request(template, j["parent"], j["reply"], max_tokens) for j in jobs]) \
        if backend else []
    rows = [j | {"judge_model": judge_name, **_stance(reply), **call_columns(reply)} for j, reply in zip(jobs, replies)]
    write_table("pushback_labels", rows, labels, provenance)
    unparsed = sum(not r["stance"] for r in rows)
    log.info("labelled %d debate replies of %d (dataset, method, iteration) units (%d unparsable); %s", len(rows),
             len({(j["dataset"], j["method"], j["iteration"]) for j in jobs}), unparsed,
             backend.stats() if backend else "no replies")


def lmad_self_report(questions: list[str], localizations: list[str], positions: list[str], prompt: str,
                     prompt_self_report: str, reports: str, model: dict, cache_dir: str, max_tokens: int,
                     seed: int, provenance: dict, states: list[str] | None = None, persistence: float = 0.0,
                     members: str | None = None, **tone_prompts: str) -> None:
    """Layer A on LMAD's local debate, every (dataset, LMAD method, iteration) of one backbone in
    ONE batch: each turn's request is rebuilt from its stage tables (lmad.studies.disagreement.local; the
    debater prompt ``prompt``, the tone of a toned method, P from the previous iteration's
    ``states``) and followed by the self-report question in that conversation.

    Layer C (``persistence`` > 0): in a toned method, a seeded share of the turns (a draw per
    (question, iteration, round, agent)) is re-asked in the same batch, with new seeds, once in
    the turn's conversation with the tone instruction deleted (``persist_removed``; the reply
    written under the tone stays) and once with it kept (``persist_kept``, the noise floor) --
    exactly what ``engine.self_reports`` does in a debate method's round.

    A method with a selected society (``lmad+ac-greedy``; ``members``: the society file) rebuilds
    each turn under its member's persona and asks it on the member's weights, as the local debate
    did (one batch per set of weights)."""
    qs = {}
    for path in questions:
        qs.update({q["qid"]: q for q in read_table("questions", path).to_dicts()})
    committed = {(dataset, method, k + 1): {s["qid"]: s["committed"] for s in rows}
                 for (dataset, method, k), rows in _iteration_rows("lmad_state", states or []).items()}
    debater, asked = load_prompt(prompt), load_prompt(prompt_self_report)
    tones = {role.removeprefix("prompt_"): load_prompt(path).user for role, path in tone_prompts.items()}
    jobs, weights, society, agent_of = [], JobWeights(model, cache_dir, lambda spec, cache: open_backend(spec, cache)), \
        SocietyFile(members), {}
    for (dataset, name, k), tables in sorted(_lmad_tables(localizations, positions).items()):
        role = tone_role(registered_method(name).tone)
        agents = society.agents(name, dataset) or crew(model)  # a committee's members speak on their own models
        voice = (lambda a, p, agents=agents: member_prompt(p, "debater", agents[a])) if agents else None
        for turn in local_turns(debater, tones[role] if role else "", qs, committed.get((dataset, name, k), {}),
                                tables["localizations"], tables["positions"], max_tokens, voice=voice):
            where = (turn["qid"], k, turn["round"], turn["agent"])
            asks = [(SELF_REPORT_STEP, turn["request"])]
            if role and persistence > 0 and \
                    random.Random(derive_seed(seed, where[0], "persist", *where[1:])).random() < persistence:
                asks += [(PERSIST_REMOVED, turn["untoned"]), (PERSIST_KEPT, turn["request"])]
            for step, request in asks:
                s = derive_seed(seed, where[0], step, *where[1:])
                agent_of[len(jobs)] = agents[turn["agent"]] if agents else None
                jobs.append((dataset, name, step, turn, self_report_request(request, turn["reply"], asked, s)))
    # without a society: one batch on the model's own weights, as before
    replies = generate_by_backend([(weights.of(agent_of[i]), job[-1]) for i, job in enumerate(jobs)])
    rows = []
    for (dataset, name, step, turn, req), reply in zip(jobs, replies):
        label, error = parse_self_report(reply.text)
        rows.append({"dataset": dataset, "method": name, **{k: turn[k] for k in ("qid", "iteration", "round", "agent")},
                     "step": step, "temperature": req.temperature, "seed": req.seed, "response": reply.text,
                     "parsed": as_json(label), "parse_error": error, **call_columns(reply)})
    write_table("lmad_self_reports", rows, reports, provenance)
    log.info("self-reports of %d local-debate turns, %d layer-C re-asks (%d unparsable); %s",
             sum(r["step"] == SELF_REPORT_STEP for r in rows), sum(r["step"] != SELF_REPORT_STEP for r in rows),
             sum(not r["parsed"] for r in rows), weights.stats() if jobs else "no turns")


def load_layers(steps: list[str], labels: list[str], validation: list[str],
                lmad_reports: list[str] | None = None) -> tuple[list[dict], list[dict], str, str]:
    """The disagreement tables' inputs read once: (layer-A and C report rows with ``backbone``,
    ``dataset``, ``method``; layer-B label rows with ``backbone``; the judge's status ``PASSED`` /
    ``FAILED`` / ``off``; its validation line). Shared by results/paper/disagreement.* and the
    layered-disagreement paper's own tables (lmad.stages.paper_layered)."""
    reports = []
    for path in steps:
        where = layout.parse(path)
        reports += [r | {"backbone": where.backbone, "dataset": where.dataset, "method": where.method,
                         "iteration": 0}
                    for r in read_table("debate_steps", path).to_dicts() if r["step"] in MEASUREMENT_STEPS]
    for path in lmad_reports or []:
        reports += [r | {"backbone": layout.parse(path).backbone} for r in read_table("lmad_self_reports", path).to_dicts()]
    judged = []
    for path in labels:
        judged += [r | {"backbone": layout.parse(path).backbone} for r in read_table("pushback_labels", path).to_dicts()]
    if validation:
        v = read_table("pushback_validation", validation[0]).to_dicts()[0]
        status, line = ("PASSED" if v["passed"] else "FAILED"), validation_line(v)
        if not v["passed"]:
            line = f"**{line} Its labels are not used: every layer-B column is empty.**"
    else:
        status, line = "off", "Layer B (pushback judge): off (config disagreement.pushback)."
    return reports, judged, status, line


def disagreement_table(steps: list[str], labels: list[str], validation: list[str], csv: str, md: str,
                       self_report: bool, provenance: dict, lmad_reports: list[str] | None = None,
                       png: str | None = None) -> None:
    """results/paper/disagreement.{csv,md} from the rounds' ``debate_steps`` and LMAD's self-report
    tables (layer A), the backbones' pushback labels and the judge's validation (layer B; empty
    lists when off)."""
    reports, judged, status, line = load_layers(steps, labels, validation, lmad_reports)
    rows = disagreement_rows(reports, judged, status)
    write_csv(csv, pl.DataFrame(rows).select(COLUMNS) if rows else pl.DataFrame(schema={c: pl.Utf8 for c in COLUMNS}))
    write_text(md, disagreement_markdown(rows, line, self_report))
    if png:
        figure(rows, png)
    log.info("disagreement table: %d cells, layer B %s", len(rows), status)
