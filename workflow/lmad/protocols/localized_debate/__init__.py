"""Localized Multi-Agent Debate (LMAD; paper §3).

Per question and iteration ℓ, with committed state P (empty at ℓ = 0):

1. generation   — every agent samples a rationale and answer given (q, x, P)
                  (``lmad.solver``; iteration 0 reuses the shared SC proposals);
2. stop check   — all normalized answers agree → stop (``controller``);
3. extraction   — rationale → ordered atomic claims + quality check (``nodes``);
4. localization — conflict δ and one-based witness index per agent (``localize``);
5. local debate — R rounds over the segments ending at the witnesses (``local_debate``);
6. resolution   — replacement nodes Ẑ and supporting quotations Q̂ (``resolve``);
7. commit guard — strict / concrete / always admission (``commit_guard``), then the
                  state transition and stop reason (``controller``).

The three commit policies are three methods sharing every common call through the
call cache.
"""
from .commit_guard import POLICIES

__all__ = ["POLICIES"]
