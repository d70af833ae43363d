# Opinion questions (GlobalOpinionQA; docs/task-families.md "Scoring") have no gold, so accuracy
# is not reported on them: rule opinion_table compares each method's answer distribution with
# every surveyed country's (lmad.stages.opinion). One job per backbone, Parquet in, no model
# calls; planned, and a target of `rule all`, only when a dataset's questions are opinions.

from lmad.data import ANSWER_TYPE


OPINION_DATASETS = [d for d in DATASETS if ANSWER_TYPE[dataset_type(d, config["datasets"][d])] == "opinion"]
# methods with several agents or samples per question: their final round's answers (the rounds
# the finalizers read); every other method contributes its prediction
OPINION_ROUND_METHODS = finalizer_methods()


def opinion_outputs():
    """What rule opinion_table adds to `rule all` (nothing without an opinion dataset)."""
    return [layout.analysis(b, f"opinion.{ext}") for b in BACKBONES for ext in ("parquet", "md") if OPINION_DATASETS]


def opinion_round_units():
    """[dataset, method, round] of every answer table rule opinion_table reads, rounds in order."""
    return [[d, m, t] for d in OPINION_DATASETS for m in OPINION_ROUND_METHODS for t in range(method_rounds(m))]


def opinion_prediction_units():
    return [[d, m] for d in OPINION_DATASETS for m in config["methods"] if m not in OPINION_ROUND_METHODS]


if OPINION_DATASETS:

    localrules:
        opinion_table,

    rule opinion_table:
        input:
            questions=lambda w: [questions_path(w.backbone, d) for d in OPINION_DATASETS],
            rounds=lambda w: [round_answers(w.backbone, d, m, t) for d, m, t in opinion_round_units()],
            predictions=lambda w: [layout.predictions(w.backbone, d, m) for d, m in opinion_prediction_units()],
        output:
            table=layout.analysis("{backbone}", "opinion.parquet"),
            table_md=layout.analysis("{backbone}", "opinion.md"),
        log:
            "logs/{backbone}/opinion.log",
        params:
            backbone=lambda w: w.backbone,
            datasets=OPINION_DATASETS,
            methods=config["methods"],
            round_units=opinion_round_units(),
            prediction_units=opinion_prediction_units(),
            code=code_hash("lmad.stages.opinion.opinion_table", "lmad.stages.opinion.opinion_rows",
                           "lmad.stages.opinion.summarize", "lmad.stages.opinion.final_answers",
                           "lmad.stages.opinion.opinion_markdown", "lmad.answer_types.opinion_similarity"),
        conda:
            "../envs/pipeline.yaml"
        script:
            "../workflow/scripts/opinion_table.py"
