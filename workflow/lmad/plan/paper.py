"""The paper's tables, figures and trace viewer (rules/paper.smk): every backbone, or the job's one
where the rule has that wildcard."""
from __future__ import annotations

from .. import layout
from ..paper import wdh as wdh_table1
from ..registry import TABLE2_METHODS, TRACE_FIGURE_METHODS


class PaperPlan:
    """Paper tables of a run's plan (``plan.paper``): the run's scope, and any other
    axis' tables, come from ``plan`` (lmad.plan.Plan)."""

    def __init__(self, plan):
        self.plan = plan

    def _backbones(self, wildcards) -> list[str]:
        return [wildcards.backbone] if wildcards is not None and "backbone" in wildcards.keys() else self.plan.backbones

    def columns(self) -> list[str]:
        """Table 1 columns: the configured list, restricted to methods this run has."""
        return [m for m in self.plan.config["paper"]["columns"] if m in self.plan.methods]

    def judgments(self, wildcards=None) -> list[str]:
        return [layout.judgments(b, d) for b in self._backbones(wildcards) for d in self.plan.datasets]

    def predictions(self, wildcards=None) -> list[str]:
        return [p for b in self.plan.backbones for d in self.plan.datasets for p in self.plan.analysis.predictions_of(b, d)]

    def proposals(self, wildcards=None) -> list[str]:
        return [layout.samples(b, d, "proposals") for b in self.plan.backbones for d in self.plan.datasets]

    def rounds0(self, wildcards=None) -> list[str]:
        """Round 0 of every configured debate method: headroom measures each against its own opening."""
        return [layout.debate_round(b, d, m, 0) for b in self.plan.backbones for d in self.plan.datasets
                for m in self.plan.debate_methods]

    def traces(self, methods=None):
        """Input function: LMAD trace tables of the given LMAD methods (default: Table 2's, all three)."""
        wanted = [m for m in (methods or TABLE2_METHODS) if m in self.plan.methods]
        return lambda w: [layout.lmad_trace(b, d, m) for b in self._backbones(w) for d in self.plan.datasets for m in wanted]

    def debate_rounds(self, wildcards) -> list[str]:
        """Every round table of every configured debate method (one backbone when the rule has one)."""
        return self.plan.debate.every_round(self._backbones(wildcards), self.plan.datasets)

    def outputs(self) -> list[str]:
        """Everything rule paper builds under results/paper/."""
        out = [layout.paper(f"{name}.{ext}") for name in ("table1", "cost") for ext in ("csv", "md")]
        out += [self.wdh_born(f"headroom.{ext}") for ext in ("csv", "md")]
        out += [layout.paper(n) for n in ("table1.tex", "accuracy.png", "pareto.png")]
        if all(m in self.plan.methods for m in TABLE2_METHODS):
            out += [layout.paper(n) for n in ("table2.csv", "table2.md", "table2.tex", "table2_checks.csv")]
        if self.plan.debate_methods:
            out += [layout.paper(n) for n in ("rounds.png", "dynamics.csv", "dynamics.md")]
        if any(m in self.plan.methods for m in TRACE_FIGURE_METHODS):
            out.append(layout.paper("lmad_trace.png"))
        out += self.truemad_outputs()
        out += self.wdh_outputs()
        out += self.layered_outputs()
        out += self.du_outputs()
        return out + [layout.paper(f"viewer/{b}.html") for b in self.plan.backbones]

    def truemad_outputs(self) -> list[str]:
        """TrueMAD's Table 1, Tables 4-6 and 7-9 (rule paper_truemad) and Tables 10-11 (rule
        paper_truemad_process) where config ``paper.truemad`` asks for them and the run has a debate method."""
        if not (self.plan.config["paper"].get("truemad") and self.plan.debate_methods):
            return []
        return [layout.paper(f"truemad/{name}.{ext}") for name in ("table1", "tables4-6", "tables7-9", "tables10-11")
                for ext in ("csv", "md")]

    def truemad_process_inputs(self, wildcards=None) -> dict:
        """Tables 10-11's rubric inputs: every run's rubric scores and the rubric judge's validation (its
        battery's, else the answer judge's for the note) while the process study is on (config
        ``process.rubric``); none otherwise (Table 11 reads only the debate rounds)."""
        plan = self.plan
        if not plan.config["process"]["rubric"]:
            return {}
        process = plan.study("process")
        inputs = {"scores": [layout.disagreement(b, "process_scores.parquet") for b in plan.backbones],
                  "validation": plan.analysis.judge_validation_file()}
        if plan.config["process"]["battery_questions"]:
            inputs["rubric_validation"] = [process.rubric_validation_file("validation.parquet")]
        return inputs

    def wdh_outputs(self) -> list[str]:
        """When Debate Helps' Table 1 (rule paper_wdh) where config ``paper.wdh`` asks for it, its Table 20
        (rule paper_wdh_table20) where the run also has a debate method, and with replicate runs its §A.5
        robustness table (rule paper_wdh_robustness)."""
        if not self.plan.config["paper"].get("wdh"):
            return []
        names = ["table1"] + ["table20"] * bool(self.plan.debate_methods)
        # §A.5's paired gains over matched runs need two runs at least (config seeds)
        names += ["robustness"] * (len(self.plan.seeds) >= 2)
        return [layout.paper(f"wdh/{name}.{ext}") for name in names for ext in ("csv", "md")]

    def wdh_born(self, name: str) -> str:
        """The path of a table When Debate Helps reports that any config may build (readout,
        headroom_lift, headroom, societies, society_debates, societies_sweep): with the paper's tables,
        results/paper/wdh/<name>, where config ``paper.wdh`` asks for them; results/paper/<name> otherwise."""
        return layout.paper(f"wdh/{name}" if self.plan.config["paper"].get("wdh") else name)

    def wdh_columns(self) -> list[str]:
        """The datasets of When Debate Helps' Table 1 (config ``paper.wdh_datasets``, else every one)."""
        return wdh_table1.columns(self.plan.config)

    def wdh_votes(self) -> list[str]:
        """vote20's predictions on every backbone and column of the table."""
        return wdh_table1.vote_inputs(self.plan.backbones, self.wdh_columns(), self.plan.methods)

    def wdh_rounds(self, part: str = "") -> list[str]:
        """The round the table reads (its answers, or with ``part`` "_state" its state) of every debate
        row on every backbone and column."""
        return wdh_table1.round_inputs(self.plan.backbones, self.wdh_columns(), self.plan.methods, part)

    def wdh_table20_inputs(self, wildcards=None) -> dict:
        """Table 20's tables on every backbone and column: the shared proposals, the judgments (each
        method's final prediction) and each debate row's own round 0."""
        plan, cols = self.plan, self.wdh_columns()
        return {"proposals": [layout.samples(b, d, "proposals") for b in plan.backbones for d in cols],
                "judgments": [layout.judgments(b, d) for b in plan.backbones for d in cols],
                "rounds0": wdh_table1.round_inputs(plan.backbones, cols, plan.methods, round_=0)}

    # ---- the layered-disagreement paper (config paper.layered; rules paper_layered*)

    def layered_outputs(self) -> list[str]:
        """The layered-disagreement paper's tables under results/paper/layered/ where config
        ``paper.layered`` asks for them: Table 2 and layers B and C when layer A or B runs on a debating
        method (rule paper_layered), the jury when it is on (paper_layered_jury), layer D when the probe
        is on (paper_layered_probe)."""
        if not self.plan.config["paper"].get("layered"):
            return []
        names = []
        if self.plan.study("disagreement").on():
            names += ["table2", "layer_b", "layer_c"]
        if "jury" in self.plan.enabled_studies:
            names.append("jury")
        if self.plan.config["disagreement"]["probe"]:
            names.append("layer_d")
        return [layout.paper(f"layered/{name}.{ext}") for name in names for ext in ("csv", "md")]

    # ---- Du et al. (config paper.du; rule paper_du)

    def du_agents(self) -> dict[str, int]:
        """Each backbone's number of agents in its debate (``mad``)."""
        from ..protocols.debate import setting_of

        if "mad" not in self.plan.methods:
            return {}
        return {b: len(setting_of("mad", self.plan.config, b).temperatures) for b in self.plan.config["backbones"]}

    def du_models(self) -> dict[str, list[str]]:
        """Each backbone's member models: a committee's, else the model itself."""
        from ..committees import is_committee, members_of

        config = self.plan.config
        return {b: [m["model"] for m in members_of(config, b)] if is_committee(config, b) else [b]
                for b in config["backbones"]}

    def du_tables(self) -> list[str]:
        """Du et al.'s tables this run has: the accuracy table where config ``paper.du`` asks for it; the
        scaling table when the backbones debate with different numbers of agents; the cross-model table
        when a backbone is a committee of different models."""
        if not (self.plan.config["paper"].get("du") and "mad" in self.plan.methods):
            return []
        names = ["accuracy"]
        if len(set(self.du_agents().values())) > 1:
            names.append("scaling")
        if any(len(set(m)) > 1 for m in self.du_models().values()):
            names.append("cross_model")
        return names

    def du_outputs(self) -> list[str]:
        return [layout.paper(f"du/{name}.{ext}") for name in self.du_tables() for ext in ("csv", "md")]

    def du_output_files(self) -> dict:
        """Rule paper_du's named outputs (paths only; the rule adds the report captions)."""
        keys = {"accuracy": "accuracy", "scaling": "scaling", "cross_model": "cross"}
        return {f"{keys[name]}_{ext}": layout.paper(f"du/{name}.{ext}") for name in self.du_tables()
                for ext in ("csv", "md")}

    def benchmarks(self) -> dict[str, str]:
        """{dataset: its benchmark (the dataset's ``type``, else its name)}: datasets of one benchmark
        (AIME's yearly copies) pool into one column of TrueMAD's tables."""
        from ..data.loaders import dataset_type
        return {name: dataset_type(name, spec) for name, spec in self.plan.config["datasets"].items()}

    def figures(self) -> list[str]:
        """The figures rule paper_figures draws: lmad_trace needs lmad or lmad-dag (the rounds figure,
        with a debate method, is rule paper_dynamics')."""
        return ["accuracy", "pareto"] + ["lmad_trace"] * any(m in self.plan.methods for m in TRACE_FIGURE_METHODS)

    def viewer_label_inputs(self, wildcards) -> dict:
        """The trace viewer's disagreement labels of one backbone: only the layers that are on (none
        by default, so the viewer needs no disagreement job)."""
        inputs = {}
        if self.plan.disagreement["self_report"] and self.plan.debate_methods:
            inputs["steps"] = self.plan.debate.every_round([wildcards.backbone], self.plan.datasets, "_steps", first=1)
        if self.plan.disagreement["self_report"] and self.plan.lmad_methods:
            inputs["lmad_reports"] = [layout.disagreement(wildcards.backbone, "lmad_self_report.parquet")]
        if self.plan.disagreement["pushback"] and (self.plan.debate_methods or self.plan.lmad_methods):
            inputs["labels"] = [layout.disagreement(wildcards.backbone, "pushback.parquet")]
            inputs["pushback_validation"] = [self.plan.study("disagreement").pushback_validation_file("validation.parquet")]
        return inputs
