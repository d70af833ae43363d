"""Debate baselines and plug-ins (MAD, Consensus, promptMAD, dMAD, DMAD, and the TrueMAD
family), each a :class:`~.spec.Protocol` — data — run round by round by one batched
engine (:func:`~.engine.run_round`). ``methods.PROTOCOLS`` maps config method names to
protocols; rules/debate.smk runs one job per method and round.
"""
from .decisions import DEBATE_STOP_REASONS
from .engine import deal_notes, debate_prediction_rows, run_round
from .methods import PROTOCOLS, protocol
from dataclasses import replace

from .spec import MANNERS, Protocol, Setting, committee_setting, resolve_setting, society_setting
from ... import committees
from ...societies import configured_size, size_key, split_society
from ...tones import split_tone

__all__ = ["MANNERS", "PROTOCOLS", "DEBATE_STOP_REASONS", "Protocol", "Setting", "deal_notes", "debate_prediction_rows",
           "protocol", "resolve_setting", "run_round", "setting_of", "chair_rounds", "CHAIR_TIMINGS"]


#: The chair's timing modes (layered-disagreement paper) and the debate rounds before its synthesis:
#: none = the members' independent answers go to the chair; after = one exchange; per_turn = a
#: debate of config ``chair.rounds`` rounds.
CHAIR_TIMINGS = ("none", "after", "per_turn")


def chair_rounds(config: dict) -> int:
    chair = config.get("chair") or {}
    timing = chair.get("timing", "per_turn")
    if timing not in CHAIR_TIMINGS:
        raise ValueError(f"config chair.timing: {timing!r}; expected one of {list(CHAIR_TIMINGS)}")
    return {"none": 0, "after": 1}.get(timing, int(chair.get("rounds", 3)))


def setting_of(method: str, config: dict, backbone: str | None = None) -> Setting:
    """A method's resolved setting from the whole workflow config (a toned variant,
    ``mad@hostile``, takes its base method's setting; a society variant, ``mad+ac-greedy``,
    its rounds and manners, with the society's members as agents; on a committee ``backbone``,
    its members are the agents). A protocol whose final decision is a chair's synthesis
    (``final="chair"``) takes its rounds from the chair's timing (config ``chair``), unless the
    protocol fixes them (``chair-none``: 0)."""
    name, selector = split_society(split_tone(method)[0])
    debate, personas = config.get("debate") or {}, config["agents"]["temperatures"]
    if backbone is not None and committees.is_committee(config, backbone):
        if selector is not None:
            raise ValueError(f"config methods: {method!r} debates with a selected society, which runs on a single "
                             f"model; committee {backbone!r} has its own members")
        setting = committee_setting(protocol(name), debate, committees.agent_temperatures(config, backbone),
                                    f"committees.{backbone}.members")
    elif selector is None:
        setting = resolve_setting(protocol(name), debate, personas)
    else:
        setting = society_setting(protocol(name), debate, selector, configured_size(method, selector, config),
                                  size_key(selector))
    fixed = protocol(name).rounds
    if fixed is not None:
        return replace(setting, rounds=fixed)
    return replace(setting, rounds=chair_rounds(config)) if protocol(name).final == "chair" else setting
