# Paper tables, figures and trace viewer (docs/analysis.md "Paper tables and figures"): Parquet of every
# backbone in, results/paper/ out, no model calls. One rule per table, so editing one
# function's code reruns only its rule (`snakemake paper`); the figures of the judgments are one
# job (paper_figures), as matplotlib's import is most of a figure's cost; the round-wise accuracy
# figure is drawn by paper_dynamics from its table's rows, when the debates end.


# The viewer and the figures are the longest jobs after judging (~2 s each at 4 x 500): they start
# first when the judgments are in, and the short tables fill the other core.
PAPER_TAIL_PRIORITY = 5


localrules:
    paper,
    paper_table1,
    paper_table2,
    paper_cost,
    paper_headroom,
    paper_figures,
    paper_viewer,
    paper_dynamics,
    paper_truemad,
    paper_truemad_process,
    paper_wdh_table20,
    paper_wdh,
    paper_wdh_robustness,


rule paper:
    input:
        plan.paper.outputs(),


rule paper_table1:
    input:
        validation=plan.analysis.judge_validation_file(),
        judgments=plan.paper.judgments(),
        held_out=plan.societies.held_out_splits(),
    output:
        csv=layout.paper("table1.csv"),
        md=paper_report("table1.md", "table1"),
        tex=layout.paper("table1.tex"),
    log:
        "logs/paper/table1.log",
    params:
        **stage("lmad.stages.paper:table1"),
        held_out_size=plan.societies.held_out_size(),
        **plan.analysis.run_scope("metric", "backbones", "datasets"),
        columns=plan.paper.columns(),
        baselines=config["paper"]["baselines"],
        target="lmad",
        bootstrap_resamples=config["paper"]["bootstrap_resamples"],
        seed=config["seed"],
    conda:
        "../envs/pipeline.yaml"
    shell:
        STAGE


rule paper_table2:
    input:
        validation=plan.analysis.judge_validation_file(),
        judgments=plan.paper.judgments(),
        traces=plan.paper.traces(["lmad"]),
        questions=plan.questions.configured(),
    output:
        csv=layout.paper("table2.csv"),
        md=paper_report("table2.md", "table2"),
        tex=layout.paper("table2.tex"),
        checks_csv=layout.paper("table2_checks.csv"),
    log:
        "logs/paper/table2.log",
    params:
        **stage("lmad.stages.paper:table2"),
        **plan.analysis.run_scope("metric", "backbones", "datasets"),
    conda:
        "../envs/pipeline.yaml"
    shell:
        STAGE


rule paper_cost:
    input:
        predictions=plan.paper.predictions(),
        traces=plan.paper.traces(LMAD_METHODS),
    output:
        csv=layout.paper("cost.csv"),
        md=paper_report("cost.md", "cost"),
    log:
        "logs/paper/cost.log",
    params:
        **stage("lmad.stages.paper:cost_table"),
        **plan.analysis.run_scope("backbones", "datasets", "methods"),
    conda:
        "../envs/pipeline.yaml"
    shell:
        STAGE


rule paper_headroom:
    input:
        validation=plan.analysis.judge_validation_file(),
        questions=plan.questions.configured(),
        proposals=plan.paper.proposals(),
        judgments=plan.paper.judgments(),
        rounds0=plan.paper.rounds0(),
        held_out=plan.societies.held_out_splits(),
    output:
        csv=plan.paper.wdh_born("headroom.csv"),
        md=paper_report(plan.paper.wdh_born("headroom.md").removeprefix(layout.paper("")), "headroom"),
    log:
        "logs/paper/headroom.log",
    params:
        **stage("lmad.stages.paper:headroom_table"),
        held_out_size=plan.societies.held_out_size(),
        **plan.analysis.run_scope("metric", "backbones", "methods"),
    conda:
        "../envs/pipeline.yaml"
    shell:
        STAGE


rule paper_figures:
    priority: PAPER_TAIL_PRIORITY
    input:
        validation=plan.analysis.judge_validation_file(),
        judgments=plan.paper.judgments(),
        predictions=plan.paper.predictions(),
        questions=plan.questions.configured(),
        traces=plan.paper.traces(list(TRACE_FIGURE_METHODS)),
    output:
        **paper_figure_outputs(),
    log:
        "logs/paper/figures.log",
    params:
        **stage("lmad.stages.paper:figures"),
        **plan.analysis.run_scope("metric", "backbones", "datasets", "methods"),
        trace_questions=config["paper"]["trace_questions"],
    conda:
        "../envs/pipeline.yaml"
    shell:
        STAGE


rule paper_viewer:
    priority: PAPER_TAIL_PRIORITY
    input:
        unpack(plan.paper.viewer_label_inputs),
        validation=plan.analysis.judge_validation_file(),
        questions=plan.questions.configured(),
        judgments=plan.paper.judgments,
        traces=plan.paper.traces(LMAD_METHODS),
        rounds=plan.paper.debate_rounds,
    output:
        html=paper_report("viewer/{backbone}.html", "viewer"),
    log:
        "logs/paper/viewer_{backbone}.log",
    params:
        **stage("lmad.stages.paper:viewer"),
        metric=config["analysis"]["metric"],
    conda:
        "../envs/pipeline.yaml"
    shell:
        STAGE


rule paper_dynamics:
    input:
        questions=plan.questions.configured(),
        rounds=plan.paper.debate_rounds,
    output:
        csv=layout.paper("dynamics.csv"),
        md=paper_report("dynamics.md", "dynamics"),
        rounds_png=paper_report("rounds.png", "rounds"),
        rounds_pdf=layout.paper("rounds.pdf"),
    log:
        "logs/paper/dynamics.log",
    params:
        **stage("lmad.stages.paper:dynamics_table"),
        backbones=BACKBONES,
    conda:
        "../envs/pipeline.yaml"
    shell:
        STAGE


# TrueMAD's Table 1, Tables 4-6 and 7-9 (config paper.truemad): every seed of every backbone, AIME's copies
# pooled into one benchmark (lmad.paper.truemad)
rule paper_truemad:
    input:
        questions=plan.questions.configured(),
        rounds=plan.paper.debate_rounds,
    output:
        table1_csv=layout.paper("truemad/table1.csv"),
        table1_md=paper_report("truemad/table1.md", "truemad_table1"),
        rounds_csv=layout.paper("truemad/tables4-6.csv"),
        rounds_md=paper_report("truemad/tables4-6.md", "truemad_rounds"),
        compositions_csv=layout.paper("truemad/tables7-9.csv"),
        compositions_md=paper_report("truemad/tables7-9.md", "truemad_compositions"),
    log:
        "logs/paper/truemad.log",
    params:
        **stage("lmad.stages.paper_truemad:truemad_tables"),
        benchmarks=plan.paper.benchmarks(),
        methods=plan.paper.columns(),
    conda:
        "../envs/pipeline.yaml"
    shell:
        STAGE


# TrueMAD's Tables 10-11 (config paper.truemad): the process study's rubric scores (config process.rubric)
# and the debate rounds' CPL / AME / CMP1v3, per benchmark (AIME's copies pooled), over every seed
# (lmad.paper.truemad)
rule paper_truemad_process:
    input:
        unpack(plan.paper.truemad_process_inputs),
        questions=plan.questions.configured(),
        rounds=plan.paper.debate_rounds,
    output:
        csv=layout.paper("truemad/tables10-11.csv"),
        md=paper_report("truemad/tables10-11.md", "truemad_process"),
    log:
        "logs/paper/truemad_process.log",
    params:
        **stage("lmad.stages.paper_truemad:truemad_process_tables"),
        benchmarks=plan.paper.benchmarks(),
        methods=plan.paper.columns(),
    conda:
        "../envs/pipeline.yaml"
    shell:
        STAGE


# When Debate Helps' Table 1 (config paper.wdh): vote20's predictions and each debate's round-3 state, one
# column per dataset of paper.wdh_datasets, on the held-out questions while societies are on
# (lmad.paper.wdh)
rule paper_wdh:
    input:
        questions=[layout.questions(d) for d in plan.paper.wdh_columns()],
        predictions=plan.paper.wdh_votes(),
        rounds=plan.paper.wdh_rounds(),
        states=plan.paper.wdh_rounds("_state"),
        held_out=plan.societies.held_out_splits(),
    output:
        csv=layout.paper("wdh/table1.csv"),
        md=paper_report("wdh/table1.md", "wdh_table1"),
    log:
        "logs/paper/wdh_table1.log",
    params:
        **stage("lmad.stages.paper_wdh:wdh_table1"),
        **plan.analysis.run_scope("backbones", "methods"),
        datasets=plan.paper.wdh_columns(),
        benchmarks=plan.paper.benchmarks(),
        vote_samples=len(config["agents"]["temperatures"]),
        held_out_size=plan.societies.held_out_size(),
    conda:
        "../envs/pipeline.yaml"
    shell:
        STAGE


# When Debate Helps' Table 20 (§A.12.2; config paper.wdh): per debate row and column of paper.wdh_datasets,
# its R0 proposal hit, R0 vote, final accuracy and lift, held-out questions while societies are on; the
# paper's is a run with another seed (config/wdh-new-seed.yaml) (lmad.paper.wdh)
rule paper_wdh_table20:
    input:
        unpack(plan.paper.wdh_table20_inputs),
        questions=[layout.questions(d) for d in plan.paper.wdh_columns()],
        held_out=plan.societies.held_out_splits(),
    output:
        csv=layout.paper("wdh/table20.csv"),
        md=paper_report("wdh/table20.md", "wdh_table20"),
    log:
        "logs/paper/wdh_table20.log",
    params:
        **stage("lmad.stages.paper_wdh:wdh_table20"),
        **plan.analysis.run_scope("backbones", "methods"),
        datasets=plan.paper.wdh_columns(),
        benchmarks=plan.paper.benchmarks(),
        seed=config["seed"],
        rounds=config["debate"]["rounds"],
        held_out_size=plan.societies.held_out_size(),
    conda:
        "../envs/pipeline.yaml"
    shell:
        STAGE


# When Debate Helps §A.5 (config paper.wdh with two or more `seeds`): each society debate's Table 1
# Avg. minus Vanilla Debate's in the same run, paired over the runs (lmad.paper.wdh.paired_gains)
rule paper_wdh_robustness:
    input:
        table1=layout.paper("wdh/table1.csv"),
    output:
        csv=layout.paper("wdh/robustness.csv"),
        md=paper_report("wdh/robustness.md", "wdh_robustness"),
    log:
        "logs/paper/wdh_robustness.log",
    params:
        **stage("lmad.stages.paper_wdh:wdh_robustness"),
    conda:
        "../envs/pipeline.yaml"
    shell:
        STAGE


# ---- The layered-disagreement paper's own tables (config paper.layered; lmad.paper.layered): Table 2 and
# layers B and C from the disagreement study's inputs, the jury and layer D from the studies' tables.

localrules:
    paper_layered,
    paper_layered_jury,
    paper_layered_probe,


rule paper_layered:
    input:
        unpack(plan.study("disagreement").table_inputs),
    output:
        table2_csv=layout.paper("layered/table2.csv"),
        table2_md=paper_report("layered/table2.md", "layered_table2"),
        layer_b_csv=layout.paper("layered/layer_b.csv"),
        layer_b_md=paper_report("layered/layer_b.md", "layered_layer_b"),
        layer_c_csv=layout.paper("layered/layer_c.csv"),
        layer_c_md=paper_report("layered/layer_c.md", "layered_layer_c"),
    log:
        "logs/paper/layered.log",
    params:
        **stage("lmad.stages.paper_layered:layered_tables"),
    conda:
        "../envs/pipeline.yaml"
    shell:
        STAGE


rule paper_layered_jury:
    input:
        jury=[layout.paper("jury.csv")],
    output:
        csv=layout.paper("layered/jury.csv"),
        md=paper_report("layered/jury.md", "layered_jury"),
    log:
        "logs/paper/layered_jury.log",
    params:
        **stage("lmad.stages.paper_layered:layered_jury"),
    conda:
        "../envs/pipeline.yaml"
    shell:
        STAGE


rule paper_layered_probe:
    input:
        probe=[layout.paper("probe.csv")],
    output:
        csv=layout.paper("layered/layer_d.csv"),
        md=paper_report("layered/layer_d.md", "layered_layer_d"),
    log:
        "logs/paper/layered_probe.log",
    params:
        **stage("lmad.stages.paper_layered:layered_probe"),
    conda:
        "../envs/pipeline.yaml"
    shell:
        STAGE


# ---- Du et al.'s own tables (config paper.du; lmad.paper.du): the accuracy table, and with the overlays the
# scaling table (agent counts, rounds) and the cross-model table.

localrules:
    paper_du,


rule paper_du:
    input:
        validation=plan.analysis.judge_validation_file(),
        judgments=plan.paper.judgments(),
        dynamics=[layout.paper("dynamics.csv")] if "scaling" in plan.paper.du_tables() else [],
    output:
        **paper_du_outputs(),
    log:
        "logs/paper/du.log",
    params:
        **stage("lmad.stages.paper_du:du_tables"),
        **plan.analysis.run_scope("metric", "backbones", "datasets", "methods"),
        rounds=config["debate"]["rounds"],
        agents=plan.paper.du_agents(),
        models=plan.paper.du_models(),
    conda:
        "../envs/pipeline.yaml"
    shell:
        STAGE
