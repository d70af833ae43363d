"""Every debate method, as data. Config ``methods`` names them; adding one is one entry here
(plus its prompts): ``lmad.registry`` lists it with the other methods.

Per-question solver/auxiliary calls at the defaults (3 agents, R = 2 revision rounds;
round 0 of the MAD family is the shared self-consistency proposals, counted too):

============== ============================================================ =============
method         protocol                                                     calls
============== ============================================================ =============
mad            Du et al.: broadcast, revise from round t-1, majority        9
consensus      MAD, stops once all normalized answers agree                 3 .. 9
promptmad      MAD + explicit evaluate/support/counter/question instruction 9
truemad        MAD + K(K-1) targeted peer advice before each revision       21
computemad     MAD + K(K-1) untargeted notes dealt at random                21
selfadvicemad  MAD + K-1 self-critiques per agent                           21
dmad-manners   DMAD: IO / CoT / Step-Back (/ Self-Refine) manners           12 (3 agents)
truedmad       DMAD + TrueMAD advice                                        24 (3 agents)
dmad           Liang et al.: affirmative vs negative, judge, moderator      3 .. 10
chair          MAD rounds by config chair.timing, then a chair's synthesis  3 + 3R + 1
chair-none     the chair at timing none: the drafts go straight to it        3 + 1
============== ============================================================ =============
"""
from __future__ import annotations

from .spec import Advise, Judge, Protocol, Reason, Revise, Solve, Turn

#: DMAD's four reasoning manners in the TrueMAD paper's order; agent i takes manners[i % 4].
DMAD_MANNERS = ("io", "cot", "stepback", "selfrefine")

_MAD_OPENING = (Solve(),)
_DIVERGENT_ROUND = (Turn(0, "debate_affirmative"), Turn(1, "debate_negative"), Judge())

PROTOCOLS: dict[str, Protocol] = {p.name: p for p in [
    Protocol("mad", "MAD", opening=_MAD_OPENING, exchange=(Revise(),)),
    Protocol("consensus", "Consensus", opening=_MAD_OPENING, exchange=(Revise(),), stop="consensus",
             short="Cons."),
    Protocol("promptmad", "promptMAD", opening=_MAD_OPENING, exchange=(Revise("debate_engage"),),
             short="PromptMAD"),
    Protocol("truemad", "TrueMAD", opening=_MAD_OPENING, exchange=(Advise("peer"), Revise())),
    Protocol("computemad", "ComputeMAD", opening=_MAD_OPENING, exchange=(Advise("notes"), Revise())),
    Protocol("selfadvicemad", "Self-AdviceMAD", opening=_MAD_OPENING, exchange=(Advise("self"), Revise())),
    Protocol("dmad-manners", "DMAD", opening=(Reason(),), exchange=(Reason(),), manners=DMAD_MANNERS,
             short="dMAD-manners"),
    Protocol("truedmad", "TrueDMAD", opening=(Reason(),), exchange=(Advise("peer"), Reason()),
             manners=DMAD_MANNERS),
    Protocol("dmad", "dMAD", opening=_DIVERGENT_ROUND, exchange=_DIVERGENT_ROUND, stop="judge",
             final="moderator", agents=2, labels=("Affirmative side", "Negative side")),
    # the layered-disagreement paper's committee: drafts, R debate rounds (its timing), a chair's synthesis
    Protocol("chair", "Chair", opening=_MAD_OPENING, exchange=(Revise(),), final="chair", short="Chair"),
    # the same committee's no-debate synthesis (timing NONE) beside it in one run, for the jury's pair
    Protocol("chair-none", "Chair (no debate)", opening=_MAD_OPENING, exchange=(Revise(),), final="chair",
             rounds=0, short="Chair-none"),
]}


def protocol(name: str) -> Protocol:
    try:
        return PROTOCOLS[name]
    except KeyError:
        raise ValueError(f"unknown debate method {name!r}; known: {sorted(PROTOCOLS)}") from None
