"""Every method of the pipeline, by its config name: the one place that says what a method is.

=========  ================================================  ================  ==========
family     methods                                           predicted by      runs
=========  ================================================  ================  ==========
single     ``cot``, ``sc``                                   rule predict      a vote over one samples table
lmad       ``lmad``, ``lmad-concrete``, ``lmad-always``      rule lmad_predict the LMAD stages, one commit policy each
           (and each with a society: ``lmad+ac-greedy``)
           ``lmad-dag``, ``lmad-dag-concrete``, …            rule lmad_predict the same stages over claim graphs
debate     every protocol of lmad.protocols.debate.methods   rule debate_predict  round by round
=========  ================================================  ================  ==========

The rules (wildcard constraints, which predictions rule serves a method, which tables
exist), the paper (labels, Table 2's columns) and the config schema's method pattern and
``debate.methods`` names (filled in at load, ``lmad.config_schema``) all read this table.
A debate method that reuses existing stage kinds is one ``Protocol`` entry (plus its prompts);
an LMAD guard policy is one entry here plus its checks in ``commit_guard.REQUIRED``.
"""
from __future__ import annotations

from dataclasses import dataclass
from difflib import get_close_matches

from .protocols.debate.methods import PROTOCOLS
from .protocols.debate.spec import Protocol
from .protocols.localized_debate.commit_guard import POLICIES
from .societies import SELECTORS, split_society, with_society
from .tones import TONES, split_tone, toned

FAMILIES = ("single", "lmad", "debate")
STRUCTURES = ("chain", "dag")
#: The rule that writes each family's predictions (rules/generate.smk, lmad.smk, debate.smk).
PREDICT_RULE = {"single": "predict", "lmad": "lmad_predict", "debate": "debate_predict"}


@dataclass(frozen=True)
class Method:
    """``samples``: the samples stage a single-round method votes over; ``policy``: an LMAD
    method's commit policy; ``protocol``: a debate method's protocol. ``table2``: a column of
    Table 2 (the gate-activated subset), which needs every such method in the run."""

    name: str
    family: str
    label: str
    samples: str | None = None
    policy: str | None = None
    protocol: Protocol | None = None
    table2: bool = False
    tone: str = "neutral"  # debate tone (lmad.tones); a toned variant is a method of its own
    society: str | None = None  # the selector whose society debates (lmad.societies); its own method too
    # an LMAD method's reasoning structure: "chain" (the paper) or "dag" (claims with premises,
    # graph localization: protocols.localized_debate.premises, graph_localize)
    structure: str = "chain"

    def __post_init__(self):
        if self.family not in FAMILIES:
            raise ValueError(f"method {self.name}: unknown family {self.family!r}")
        if self.policy is not None and self.policy not in POLICIES:
            raise ValueError(f"method {self.name}: unknown commit policy {self.policy!r}")
        if self.structure not in STRUCTURES:
            raise ValueError(f"method {self.name}: unknown structure {self.structure!r}")

    @property
    def rule(self) -> str:
        return PREDICT_RULE[self.family]

    @property
    def base(self) -> str:
        """The method at the neutral tone (``mad`` for ``mad@hostile``)."""
        return split_tone(self.name)[0]


#: How a society shows in a method's label: "MAD (AC-Greedy society)".
SOCIETY_LABELS = {"ac_greedy": "AC-Greedy", "sc_greedy": "SC-Greedy", "top_k": "Top-K", "default": "default-persona"}


def _debate(p: Protocol, tone: str = "neutral") -> Method:
    label = p.short or p.title
    return Method(toned(p.name, tone), "debate", label if tone == "neutral" else f"{label} ({tone})", protocol=p,
                  tone=tone)


def _society(p: Protocol, selector: str) -> Method:
    return Method(with_society(p.name, selector), "debate", f"{p.short or p.title} ({SOCIETY_LABELS[selector]} society)",
                  protocol=p, society=selector)


#: LMAD's commit policies (neutral tone): each can take a society, whose members are then its agents.
_LMAD = {"lmad": ("LMAD", "strict"), "lmad-concrete": ("Concrete", "concrete"), "lmad-always": ("Always", "always")}
#: Graph LMAD: the same three policies over claim graphs; neutral tone, no society, not Table 2 columns.
_LMAD_DAG = {"lmad-dag": ("LMAD-DAG", "strict"), "lmad-dag-concrete": ("Concrete (DAG)", "concrete"),
             "lmad-dag-always": ("Always (DAG)", "always")}


def _lmad_society(name: str, selector: str) -> Method:
    label, policy = _LMAD[name]
    return Method(with_society(name, selector), "lmad", f"{label} ({SOCIETY_LABELS[selector]} society)", policy=policy,
                  society=selector)


METHODS: dict[str, Method] = {m.name: m for m in [
    Method("cot", "single", "CoT", samples="cot"),
    Method("sc", "single", "SC", samples="proposals"),
    Method("sc-matched", "single", "SC (matched tokens)", samples="matched"),
    *(Method(name, "lmad", label, policy=policy, table2=True) for name, (label, policy) in _LMAD.items()),
    # LMAD (Strict) with a tone in its local debate (lmad.tones); not Table 2 columns
    *(Method(toned("lmad", tone), "lmad", f"LMAD ({tone})", policy="strict", tone=tone) for tone in TONES[1:]),
    *(Method(name, "lmad", label, policy=policy, structure="dag") for name, (label, policy) in _LMAD_DAG.items()),
    *(_debate(p) for p in PROTOCOLS.values()),
    # every debating method at the two non-neutral tones (lmad.tones), after all neutral methods
    *(_debate(p, tone) for tone in TONES[1:] for p in PROTOCOLS.values()),
    # every debating method with each selected society (lmad.societies; neutral tone), last
    *(_society(p, sel) for sel in SELECTORS for p in PROTOCOLS.values()),
    # LMAD (each policy) with each selected society: its agents are the members; not Table 2 columns
    *(_lmad_society(name, sel) for sel in SELECTORS for name in _LMAD),
]}


def method(name: str) -> Method:
    try:
        return METHODS[name]
    except KeyError:
        pass
    base, selector = split_society(name)  # an unknown society suffix raises here, naming the known ones
    if selector is not None and base not in PROTOCOLS and base not in _LMAD:
        raise ValueError(f"method {name!r}: only a debating method at the neutral tone ({', '.join(PROTOCOLS)}) "
                         f"or an LMAD policy ({', '.join(_LMAD)}) can run with a society; {base!r} is not one")
    raise ValueError(_unknown(name, base))


def _unknown(name: str, base: str) -> str:
    """Why ``name`` is no method, by its parts: ``<method>[@tone][+society]``."""
    plain, _, tone = base.partition("@")
    bases = [m for m in METHODS if "@" not in m and "+" not in m]
    if plain in bases and tone:
        toned_ok = sorted({m.split("@")[0] for m in METHODS if "@" in m and "+" not in m})
        return (f"method {name!r}: unknown tone {tone!r} (tones: {', '.join(TONES[1:])}, "
                f"on {', '.join(toned_ok)})")
    close = get_close_matches(plain, bases, n=1, cutoff=0.5)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return (f"unknown method {name!r}{hint}. Methods are <base>[@tone][+society]; bases: {', '.join(bases)}; "
            f"tones: {', '.join(TONES[1:])}; societies: {', '.join(s.replace('_', '-') for s in SELECTORS)}")


def names(family: str, among=None) -> list[str]:
    """Methods of one family, in registry order (restricted to ``among`` when given)."""
    return [m.name for m in METHODS.values() if m.family == family and (among is None or m.name in among)]


#: Table 2's columns, in order.
TABLE2_METHODS = [m.name for m in METHODS.values() if m.table2]
#: The methods the LMAD trace figure draws (each picked question once per method that debated it).
TRACE_FIGURE_METHODS = ("lmad", "lmad-dag")
