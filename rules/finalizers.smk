# Finalizers and round-level controls (When Debate Helps; README "Finalizers and round-level
# controls"): every finalizer of config `finalizers.names` (vote, vote_judge, lvd) applied to
# every saved round of every method — a debate method's round{t}, an LMAD method's
# iter{k}/generate, SC's shared proposals — one job per backbone covering every dataset, every
# judge / verifier call in one batch (lmad.stages.finalizers). Off unless finalizers.enabled.

FINALIZE = config["finalizers"]


def finalizer_methods():
    """Methods whose rounds are finalized, config order: every debate and LMAD method, and every
    voting method (SC: its one round, the shared proposals; sc-matched: its samples)."""
    return [m for m in config["methods"]
            if METHODS[m].family in ("debate", "lmad") or METHODS[m].samples not in (None, "cot")]


def method_rounds(method):
    """How many answer tables a method saves: R + 1 debate rounds, L LMAD iterations, SC's one."""
    family = METHODS[method].family
    if family == "debate":
        return debate_setting(method).rounds + 1
    return config["lmad"]["iterations"] if family == "lmad" else 1


def round_answers(backbone, dataset, method, t):
    """The answer table of round t of a method (lmad.layout)."""
    family = METHODS[method].family
    if family == "debate":
        return layout.debate_round(backbone, dataset, method, t)
    if family == "lmad":
        return layout.lmad_table(backbone, dataset, method, t, "generate")
    return layout.samples(backbone, dataset, METHODS[method].samples)


def finalizer_round_units():
    """[dataset, method, round] of every answer table a finalizers job reads, in input order."""
    return [[d, m, t] for d in DATASETS for m in finalizer_methods() for t in range(method_rounds(m))]


def finalizer_rounds(wildcards):
    return [round_answers(wildcards.backbone, d, m, t) for d, m, t in finalizer_round_units()]


def finalized_tables(wildcards=None):
    return [layout.finalized(b, d) for b in _backbones(wildcards) for d in DATASETS]


def readout_outputs():
    """What the finalizers and readout rules add to `rule all` (nothing unless enabled)."""
    if not FINALIZE["enabled"]:
        return []
    return [layout.paper(f"{name}.{ext}") for name in ("readout", "headroom_lift") for ext in ("csv", "md", "png")]


if FINALIZE["enabled"]:
    if SHARDS > 1:
        raise ValueError("finalizers.enabled needs shards: 1 (rule finalizers reads every round of a whole dataset)")

    rule finalizers:
        input:
            questions=question_tables,
            rounds=finalizer_rounds,
            prompt_judge=config["prompts"]["finalize_judge"],
            prompt_verifier=config["prompts"]["verifier"],
            weights=lambda w: model_files(w.backbone),
        output:
            finalized=[layout.finalized("{backbone}", d) for d in DATASETS],
        log:
            "logs/{backbone}/finalizers.log",
        benchmark:
            "benchmarks/{backbone}/finalizers.tsv"
        params:
            **model_params(),
            round_units=finalizer_round_units(),
            datasets=DATASETS,
            names=FINALIZE["names"],
            max_tokens=FINALIZE["max_tokens"],
            lvd_weight=FINALIZE["lvd_weight"],
            min_quote_words=FINALIZE["min_quote_words"],
        conda:
            "../envs/pipeline.yaml"
        threads: lambda w: model_threads(w.backbone)
        resources:
            **model_resources(),
        script:
            "../workflow/scripts/finalizers.py"
