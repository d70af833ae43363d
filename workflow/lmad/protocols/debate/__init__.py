"""Debate baselines and plug-ins (MAD, Consensus, promptMAD, dMAD, DMAD, and the TrueMAD
family), each a :class:`~.spec.Protocol` — data — run round by round by one batched
engine (:func:`~.engine.run_round`). ``methods.PROTOCOLS`` maps config method names to
protocols; rules/debate.smk runs one job per method and round.
"""
from .decisions import DEBATE_STOP_REASONS
from .engine import deal_notes, debate_prediction_rows, run_round
from .methods import PROTOCOLS, protocol
from .spec import MANNERS, Protocol, Setting, resolve_setting, society_setting
from ...societies import configured_size, size_key, split_society
from ...tones import split_tone

__all__ = ["MANNERS", "PROTOCOLS", "DEBATE_STOP_REASONS", "Protocol", "Setting", "deal_notes", "debate_prediction_rows",
           "protocol", "resolve_setting", "run_round", "setting_of"]


def setting_of(method: str, config: dict) -> Setting:
    """A method's resolved setting from the whole workflow config (a toned variant,
    ``mad@hostile``, takes its base method's setting; a society variant, ``mad+ac-greedy``,
    its rounds and manners, with the society's members as agents)."""
    name, selector = split_society(split_tone(method)[0])
    debate, personas = config.get("debate") or {}, config["agents"]["temperatures"]
    if selector is None:
        return resolve_setting(protocol(name), debate, personas)
    return society_setting(protocol(name), debate, selector, configured_size(method, selector, config),
                           size_key(selector))
