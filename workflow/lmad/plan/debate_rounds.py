"""The debate baselines' jobs (rules/debate.smk): one job per (backbone, method, round); layer A's
self-report and layer C's re-asks (config ``disagreement``) are asked inside them."""
from __future__ import annotations

from .. import layout
from ..protocols.debate import setting_of
from ..registry import METHODS
from ..tones import tone_role


class DebatePlan:
    """Debate tables of a run's plan (``plan.debate``): the run's scope, and any other
    axis' tables, come from ``plan`` (lmad.plan.Plan)."""

    def __init__(self, plan):
        self.plan = plan

    def setting(self, method: str, backbone: str | None = None):
        """Agents, temperatures, rounds and manners of a debate method (config ``debate``); on a
        committee backbone (or a run of one) its members are the agents. Rounds never depend on it."""
        return setting_of(method, self.plan.config, None if backbone is None else layout.model_of(backbone))

    def aux_max_tokens(self, method: str) -> dict:
        """Budgets of a debate round's calls of no agent: config ``debate.max_tokens``, plus the
        chair's (config ``chair.max_tokens``) for the chair's methods only, so no other job's params change."""
        budgets = dict(self.plan.config["debate"]["max_tokens"])
        if METHODS[method].protocol.final == "chair":
            budgets["chair"] = self.plan.config["chair"]["max_tokens"]
        return budgets

    def rounds_of(self, method: str, first: int = 0) -> range:
        """A debate method's saved rounds, ``first`` .. R."""
        return range(first, self.setting(method).rounds + 1)

    def every_round(self, backbones, datasets, part: str = "", first: int = 0) -> list[str]:
        """Every debate method's round tables (``part``), backbone, dataset, method, then round."""
        return [layout.debate_round(b, d, m, t, part) for b in backbones for d in datasets
                for m in self.plan.debate_methods for t in self.rounds_of(m, first)]

    def round_patterns(self, part: str) -> list[str]:
        """Rule debate_round's outputs (``part``): one table per work dataset, wildcards kept."""
        return [layout.debate_round("{backbone}", w, "{debate_method}", "{debate_round}", part)
                for w in self.plan.job_datasets()]

    def round_inputs(self, wildcards) -> dict:
        """Round 0 of a protocol that opens like self-consistency, at the persona temperatures, is the
        shared proposals table (zero calls); round t >= 1 reads round t - 1. Plus the prompt
        templates this round uses, so editing one reruns only its rounds. A method with a society
        reads the society file in every round, so a re-selection reruns all of them."""
        t, method = int(wildcards.debate_round), wildcards.debate_method
        setting = self.setting(method, wildcards.backbone)
        inputs = {"members": layout.society(wildcards.backbone, "members")} if setting.society else {}
        if t == 0 and setting.shares_proposals:
            inputs["proposals"] = self.plan.questions.proposal_tables(wildcards)
        elif t > 0:
            for name, part in (("previous", ""), ("previous_state", "_state")):
                inputs[name] = [layout.debate_round(wildcards.backbone, w, method, t - 1, part)
                                for w in self.plan.job_datasets(wildcards)]
        roles = METHODS[method].protocol.prompt_roles(t, t == setting.rounds, setting.manners,
                                                       setting.shares_proposals)
        prompts = self.plan.config["prompts"]
        return inputs | {f"prompt_{role}": prompts[role] for role in roles + self.disagreement_roles(method, t)}

    def disagreement_roles(self, method: str, t: int) -> list[str]:
        """The prompt roles of a debate round besides its protocol's: the tone instruction of a toned
        method (lmad.tones) and the layer-A self-report (config disagreement.self_report), both in
        rounds t >= 1 only."""
        if t == 0:
            return []
        role = tone_role(METHODS[method].tone)
        return ([role] if role else []) + (["self_report"] if self.plan.disagreement["self_report"] else [])

    def persistence_params(self) -> dict:
        """Layer C's share of re-asked turns for rules debate_round and lmad_self_report; nothing when
        off (so the default config's jobs keep their params)."""
        share = self.plan.disagreement["persistence"] if self.plan.disagreement["self_report"] else 0
        return {"persistence": share} if share else {}

    def every_round_by_method(self, part: str):
        """Input function: every debate method's round table (``part``) of every round: method after
        method, dataset after dataset (job_datasets order), rounds in order."""
        return lambda w: [layout.debate_round(w.backbone, d, m, t, part) for m in self.plan.debate_methods
                          for d in self.plan.job_datasets(w) for t in self.rounds_of(m)]

    def final_state(self, wildcards) -> list[str]:
        return [layout.debate_round(wildcards.backbone, w, m, self.setting(m).rounds, "_state")
                for m in self.plan.debate_methods for w in self.plan.job_datasets(wildcards)]

    def replies(self, wildcards) -> list[str]:
        """Every round's answers table of every configured debate method of one backbone."""
        return self.every_round([wildcards.backbone], self.plan.job_datasets(wildcards))
