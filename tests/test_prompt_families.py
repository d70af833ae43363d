"""Every prompt template names the task of its question's family: a question with passages reads
the multi-hop wording (byte for byte as before the families: the call cache keys on the rendered
prompt), a math, multiple-choice or survey question is never told about passages it does not
have, nor called a multi-hop question, and a template that asks for an answer asks for the
answer type's own form."""
import hashlib
import json
import re
from string import Template

import pytest

from conftest import REPO
from lmad.backends.scripted import ScriptedBackend
from lmad.data import load_jsonl
from lmad.studies.finalizers.finalize import judge_request, verify_request
from lmad.studies.jury.verdicts import jury_request
from lmad.prompts import load_prompt, question_fields
from lmad.protocols.debate import PROTOCOLS, protocol, resolve_setting, run_round
from lmad.protocols.debate.spec import MANNERS
from lmad.protocols.localized_debate.local_debate import debate_request
from lmad.protocols.localized_debate.localize import localization_request
from lmad.protocols.localized_debate.resolve import resolution_request
from lmad.solver import solver_request

PROMPT_DIR = REPO / "config" / "prompts"
TEMPLATES = sorted(p.stem for p in PROMPT_DIR.glob("*.txt"))
PROMPTS = {name: load_prompt(PROMPT_DIR / f"{name}.txt") for name in TEMPLATES}
QUESTION_FIELDS = set(question_fields({"question": "q", "benchmark": "hotpotqa", "answer_type": "span", "context": []}))

# Templates whose code path renders them without question_fields (each with the fields it is
# given), and the tone instructions, which are appended to a turn's system message as written
# (lmad.tones.with_tone), never rendered.
OWN_FIELDS = {"extractor": {"question", "rationale"},              # protocols/localized_debate/nodes.py
              "extractor_premises": {"question", "rationale", "titles"},  # protocols/localized_debate/premises.py
              "judge": {"question", "gold", "prediction"},         # stages/judge.py
              "relation_check": {"question", "claims"},            # protocols/localized_debate/relation_check.py
              "process_rubric": {"question", "parent", "own", "reply"},  # process.py
              "pushback_judge": {"parent", "reply"},               # disagreement/pushback.py
              "self_report": set()}                                # disagreement_labels.py
# tone instructions: not rendered as templates, appended to a turn's system message (lmad.tones)
UNRENDERED = {"tone_friendly", "tone_hostile"}

DEMO = REPO / "data" / "demo"
# one demo question per family, loaded as the pipeline loads it
FAMILIES = {"span": ("hotpotqa.jsonl", "hotpotqa"), "yes_no": ("strategyqa.jsonl", "strategyqa"),
            "numeric": ("gsm8k.jsonl", "gsm8k"), "math": ("math500.jsonl", "math500"),
            "choice": ("mmlu.jsonl", "mmlu"), "opinion": ("globalopinionqa.csv", "globalopinionqa")}
NO_PASSAGES = ("numeric", "math", "choice", "opinion")


@pytest.fixture(scope="module")
def demo():
    out = {}
    for family, (file, dataset) in FAMILIES.items():
        q = load_jsonl(DEMO / file, dataset)[0]
        assert q["answer_type"] == family and bool(q["context"]) == (family not in NO_PASSAGES)
        out[family] = q
    return out


def placeholders(text: str) -> set[str]:
    return {m.group("named") or m.group("braced") for m in Template.pattern.finditer(text)} - {None}


def fields_of(name: str, question: dict) -> dict[str, str]:
    """question_fields plus a marker for every other field the template names."""
    p = PROMPTS[name]
    return {f: f"<{f}>" for f in placeholders(p.system + p.user)} | question_fields(question)


def rendered(name: str, question: dict) -> str:
    if name in UNRENDERED:  # appended to a turn's system message by lmad.tones.with_tone
        from lmad.tones import with_tone

        return with_tone((), PROMPTS[name].user, question_fields(question))[0][1]
    return "\n".join(text for _, text in PROMPTS[name].render(**fields_of(name, question)))


def bare(text: str, question: dict) -> str:
    """``text`` without the question's own text and passages (a math question has ``$`` signs)."""
    f = question_fields(question)
    return text.replace(f["question"], "").replace(f["passages"], "")


def mentions_passages(text: str) -> list[str]:
    return [w for w in ("passage", "multi-hop") if w in text.lower()]


# ------------------------------------------------------------------ every template, every family

@pytest.mark.parametrize("family", list(FAMILIES))
@pytest.mark.parametrize("name", sorted(set(TEMPLATES) - UNRENDERED))
def test_every_template_renders_for_every_family(name, family, demo):
    q = demo[family]
    text = rendered(name, q)
    assert not re.search(r"\$[\w{]", bare(text, q)), f"{name}: a field left unfilled"
    if family in NO_PASSAGES:
        assert not mentions_passages(text), f"{name} tells a {family} question about {mentions_passages(text)}"
        assert "<short answer>" not in text
    f = question_fields(q)
    user = PROMPTS[name].user
    if "$answer_line" in user:
        assert text.endswith(f["answer_line"])
    elif "Answer:" in user:  # the answer line written out ends the template, in the type's form
        assert text.splitlines()[-1].endswith(f'"Answer: {f["answer_form"]}".')
    elif '"answer"' in user:  # the judge and moderator's JSON answer
        assert f'"answer": "{f["answer_form"]}"' in text


@pytest.mark.parametrize("family", list(FAMILIES))
@pytest.mark.parametrize("name", sorted(UNRENDERED))
def test_a_tone_instruction_names_the_question_s_own_evidence(name, family, demo):
    """Appended as written, then filled with the turn's question fields (lmad.tones.with_tone):
    a multi-hop question reads "the passages" as it always did, a math one the problem."""
    from lmad.tones import with_tone

    q = demo[family]
    (_, system), = with_tone((("system", "S"),), PROMPTS[name].user, question_fields(q))
    assert system.startswith("S\n\n") and "$" not in system
    if family in NO_PASSAGES:
        assert not mentions_passages(system), system
    else:
        assert "the passages" in system and system == "S\n\n" + PROMPTS[name].user.replace("$evidence", "passages")
    assert placeholders(PROMPTS[name].user) == {"evidence"}


def test_question_fields_reach_every_template_that_names_them():
    """A template whose code path builds its own fields names none of question_fields' own
    (``question`` aside, which those paths pass); every template is of one kind or the other."""
    for name in TEMPLATES:
        names = placeholders(PROMPTS[name].system + PROMPTS[name].user)
        if name in OWN_FIELDS:
            assert names == OWN_FIELDS[name], name
        elif name not in UNRENDERED:
            assert names & (QUESTION_FIELDS - {"question", "context"}), f"{name}: which code path renders it?"


def test_each_header_lists_the_fields_of_its_template():
    for name in TEMPLATES:
        text = (PROMPT_DIR / f"{name}.txt").read_text()
        header = re.split(r"^### (?:system|user)\s*$", text, maxsplit=1, flags=re.MULTILINE)[0]
        p = PROMPTS[name]
        assert placeholders(header) == placeholders(p.system + p.user), name


# ------------------------------------------------------------------ multi-hop: byte-identical

PASSAGES = [{"title": "Pride and Prejudice", "sentences": ["Pride and Prejudice is a novel by Jane Austen."]},
            {"title": "Jane Austen", "sentences": ["Jane Austen was born in Steventon, Hampshire.", "She died in 1817."]}]
MULTI_HOP = [  # span, yes/no wording on a span set, StrategyQA's facts, a span question left without passages
    {"qid": "h1", "dataset": "hotpotqa", "benchmark": "hotpotqa", "qtype": "bridge", "answer_type": "span",
     "question": "In which English county was the author of Pride and Prejudice born?", "context": PASSAGES,
     "choices": []},
    {"qid": "h2", "dataset": "hotpotqa", "benchmark": "hotpotqa", "qtype": "comparison", "answer_type": "span",
     "question": "Were Jane Austen and Charlotte Bronte of the same nationality?", "context": PASSAGES, "choices": []},
    {"qid": "s1", "dataset": "strategyqa", "benchmark": "strategyqa", "qtype": "boolean", "answer_type": "yes_no",
     "question": "Is the Eiffel Tower taller than the Statue of Liberty?",
     "context": [{"title": "Facts", "sentences": ["The Eiffel Tower is about 330 metres tall."]}], "choices": []},
    {"qid": "m1", "dataset": "musique", "benchmark": "musique", "qtype": "2hop", "answer_type": "span",
     "question": "Who founded it?", "context": []},
]
# sha256 (16 hex) of each template's renderings of MULTI_HOP, computed from the templates as they
# were before the task families' wording (git show bf0e25b:config/prompts/<name>.txt). A change
# here changes every multi-hop call's cache key: make it on purpose, then update the pin.
PINNED = {
    "chair": "aa511b825033568e", "extractor_premises": "2bb6d6fe829c0bd9",  # added after the pin, as they are
    "jury_subscores": "9f887fbaa9d62a43",  # added after the pin, as it is
    "debate_advise": "ad80d7e3e633b5dd", "debate_affirmative": "28047cca787dd221", "debate_cot": "804c59f7bbccec8d",
    "debate_engage": "f6dfe0e8b0816cf2", "debate_io": "72bb68640c2eaf5b", "debate_judge": "82d6586884a1e666",
    "debate_moderator": "de34fdc0f98dfd39", "debate_negative": "199fff32b7b88ab5", "debate_note": "c1f3a51921fd72bb",
    "debate_refine": "ef592ccee305664b", "debate_refine_critique": "ff1feb8e50c0e36a",
    "debate_revise": "5f0844b16d391b33", "debate_self_critique": "86f21bb5434284d4",
    "debate_stepback_concept": "dcfab52eabedd202", "debate_stepback_solve": "ef6544d6c48f6508",
    "debater": "0bac394425735e3f", "extractor": "761d95be7032ab1c", "finalize_judge": "0e5ae742247c3fff",
    "judge": "ce56e8677f637ea7", "jury": "560842f0fc6e5db4", "localizer": "f3973f6ca51dfd9e",
    "process_rubric": "89b75f37d5144017", "pushback_judge": "73c11a84e0aae00c", "relation_check": "b7bbb2893fc410cc",
    "resolver": "066b917e229463be", "self_report": "0d64510afa5a7de0", "solver": "2fa447bacc9e9984",
    "tone_friendly": "a38c4764595e4911", "tone_hostile": "e43bf350a995a83b", "verifier": "4962b080911c911d",
}


def multi_hop_sha(name: str) -> str:
    texts = [rendered(name, q) for q in MULTI_HOP]
    return hashlib.sha256(json.dumps(texts).encode()).hexdigest()[:16]


def test_multi_hop_renderings_are_unchanged():
    got = {name: multi_hop_sha(name) for name in TEMPLATES}
    assert got == PINNED, "changed: " + ", ".join(n for n in TEMPLATES if got[n] != PINNED.get(n))


# ------------------------------------------------------------------ through the request builders

@pytest.mark.parametrize("family", NO_PASSAGES)
def test_lmad_finalizer_and_jury_requests_name_the_family(family, demo):
    q = demo[family]
    requests = [
        solver_request(PROMPTS["solver"], q, 0.1, 0, 64),
        localization_request(PROMPTS["localizer"], q, [], [["a claim"], ["another claim"]], ["A", "B"], 64),
        debate_request(PROMPTS["debater"], q, ["a fact"], ["a claim"], "a conflict", "a position", {1: "other"}, 0,
                       0.1, 0, 64),
        resolution_request(PROMPTS["resolver"], q, [], "a conflict", ["A", "B"], 64),
        judge_request(PROMPTS["finalize_judge"], q, ["A", "B"], 16),
        verify_request(PROMPTS["verifier"], q, "A", 64),
        jury_request(PROMPTS["jury"], q, "A", "B", 4),
        jury_request(PROMPTS["jury_subscores"], q, "A", "B", 128, subscores=True),
    ]
    f = question_fields(q)
    for req in requests:
        text = "\n".join(c for _, c in req.messages)
        assert not mentions_passages(text), text
    system = [dict(req.messages).get("system", "") for req in requests]
    assert all(f["question_kind"] in system[i] for i in (2, 4, 5))  # debater, tie judge, verifier
    assert all(f"the given {f['evidence']}" in system[i] for i in (3, 6, 7))  # resolver, jury (both forms)
    assert f"{f['quote_source']} text copied word for word" in dict(requests[3].messages)["user"]


def _respond(req):
    if req.constraint:  # an undecided judge, then the moderator
        return json.dumps({"decided": False, "answer": ""}) if "decided" in json.dumps(req.constraint) else \
            json.dumps({"answer": "A"})
    return "I reason.\nAnswer: A"


class Recorded:
    """A template that notes its name each time it is rendered."""

    def __init__(self, name, seen):
        self.name, self.seen = name, seen

    def __getattr__(self, attr):
        return getattr(PROMPTS[self.name], attr)

    def render(self, **fields):
        self.seen.add(self.name)
        return PROMPTS[self.name].render(**fields)


@pytest.mark.parametrize("family", ("numeric", "choice"))
def test_every_debate_protocol_sends_only_task_wording(family, demo):
    q = {**demo[family], "qid": "q0"}
    seen: set[str] = set()
    prompts = {name: Recorded(name, seen) for name in TEMPLATES}
    for method in PROTOCOLS:
        p = protocol(method)
        own = {"agents": len(MANNERS), "manners": list(MANNERS)} if p.reasons_in_manners else {}
        setting = resolve_setting(p, {"rounds": 2, "methods": {method: own}}, [0.1, 0.5, 0.9])
        backend = ScriptedBackend(responder=_respond)
        sent = []
        generate = backend.generate
        backend.generate = lambda requests: (sent.extend(requests), generate(requests))[1]
        prev, state = (), None
        for t in range(setting.rounds + 1):
            res = run_round(p, method, t, t == setting.rounds, [q], backend, prompts, setting.temperatures,
                            setting.manners, 0, 64, {"advice": 32, "judge": 32, "moderator": 32, "chair": 32}, previous=prev,
                            previous_state=state)
            prev, state = res.samples, res.state
        assert sent, method
        for req in sent:
            text = "\n".join(c for _, c in req.messages)
            assert not mentions_passages(text), (method, text)
    assert seen == {n for n in TEMPLATES if n.startswith("debate_")} | {"solver", "chair"}
