"""Debate baselines and plug-ins (MAD, Consensus, promptMAD, dMAD, DMAD, and the TrueMAD
family), each a :class:`~.spec.Protocol` — data — run round by round by one batched
engine (:func:`~.engine.run_round`). ``methods.PROTOCOLS`` maps config method names to
protocols; rules/debate.smk runs one job per method and round.
"""
from .decisions import DEBATE_STOP_REASONS
from .engine import deal_notes, debate_prediction_rows, run_round
from .methods import PROTOCOLS, protocol
from .spec import MANNERS, Protocol, Setting, resolve_setting
from ...tones import split_tone

__all__ = ["MANNERS", "PROTOCOLS", "DEBATE_STOP_REASONS", "Protocol", "Setting", "deal_notes", "debate_prediction_rows",
           "protocol", "resolve_setting", "run_round", "setting_of"]


def setting_of(method: str, config: dict) -> Setting:
    """A method's resolved setting from the whole workflow config (a toned variant,
    ``mad@hostile``, takes its base method's setting)."""
    return resolve_setting(protocol(split_tone(method)[0]), config.get("debate") or {}, config["agents"]["temperatures"])
