# Localized multi-agent debate (paper §3): a fixed-maximum DAG of iterations, one rule per
# stage. Each stage job covers one (backbone, iteration) and every (dataset, LMAD method)
# unit, so all active questions x agents go to the model as one batch and the three commit
# policies (lmad = strict, lmad-concrete, lmad-always) compute their identical calls once.
# Tables stay per unit (lmad.layout.lmad_table): results/{backbone}/{dataset}/{method}/iter{k}/{stage}.parquet.
# Questions that stopped pass through later iterations untouched; a stage with nothing to
# do writes empty tables without loading a model. Input functions live in rules/common.smk;
# stage bodies in lmad.stages.lmad. A method with a selected society (lmad+ac-greedy) is one
# more unit; the society file is then an input of generate and debate (its agents' stages).


if LMAD_METHODS:

    localrules:
        lmad_predict,

    rule lmad_generate:
        priority: LMAD_CHAIN_PRIORITY
        input:
            unpack(lmad_generate_inputs),
            questions=lmad_unit_questions,
            prompt=config["prompts"]["solver"],
            weights=lambda w: model_files(w.backbone),
        output:
            samples=lmad_paths("generate"),
        log:
            lmad_log("generate"),
        benchmark:
            lmad_log("generate", "benchmarks", "tsv")
        params:
            **lmad_params(),
            temperatures=config["agents"]["temperatures"],
            max_tokens=config["solver"]["max_tokens"],
            seed=call_seed,
        conda:
            "../envs/pipeline.yaml"
        threads: lambda w: model_threads(w.backbone)
        resources:
            **model_resources(),
        script:
            "../workflow/scripts/lmad_generate.py"

    rule lmad_extract:
        priority: LMAD_CHAIN_PRIORITY
        input:
            questions=lmad_unit_questions,
            samples=lmad_paths("generate"),
            prompt=config["prompts"]["extractor"],
            weights=lambda w: model_files(w.backbone),
        output:
            chains=lmad_paths("extract"),
        log:
            lmad_log("extract"),
        benchmark:
            lmad_log("extract", "benchmarks", "tsv")
        params:
            **lmad_params(),
            max_tokens=config["lmad"]["max_tokens"]["extractor"],
            max_nodes=config["lmad"]["nodes"]["max_nodes"],
            max_node_words=config["lmad"]["nodes"]["max_words"],
            iterations=config["lmad"]["iterations"],
            guard_last_iteration=config["lmad"]["guard_last_iteration"],
        conda:
            "../envs/pipeline.yaml"
        threads: lambda w: model_threads(w.backbone)
        resources:
            **model_resources(),
        script:
            "../workflow/scripts/lmad_extract.py"

    rule lmad_localize:
        priority: LMAD_CHAIN_PRIORITY
        input:
            unpack(lmad_state),
            questions=lmad_unit_questions,
            chains=lmad_paths("extract"),
            prompt=config["prompts"]["localizer"],
            weights=lambda w: model_files(w.backbone),
        output:
            localizations=lmad_paths("localize"),
        log:
            lmad_log("localize"),
        benchmark:
            lmad_log("localize", "benchmarks", "tsv")
        params:
            **lmad_params(),
            max_tokens=config["lmad"]["max_tokens"]["localizer"],
        conda:
            "../envs/pipeline.yaml"
        threads: lambda w: model_threads(w.backbone)
        resources:
            **model_resources(),
        script:
            "../workflow/scripts/lmad_localize.py"

    rule lmad_debate:
        priority: LMAD_CHAIN_PRIORITY
        input:
            unpack(lmad_state),
            unpack(lmad_society),
            questions=lmad_unit_questions,
            localizations=lmad_paths("localize"),
            prompt=config["prompts"]["debater"],
            **lmad_tone_prompts(),
            weights=lambda w: model_files(w.backbone),
        output:
            positions=lmad_paths("debate"),
        log:
            lmad_log("debate"),
        benchmark:
            lmad_log("debate", "benchmarks", "tsv")
        params:
            **lmad_params(),
            rounds=config["lmad"]["local_rounds"],
            temperatures=config["agents"]["temperatures"],
            seed=call_seed,
            max_tokens=config["lmad"]["max_tokens"]["debater"],
        conda:
            "../envs/pipeline.yaml"
        threads: lambda w: model_threads(w.backbone)
        resources:
            **model_resources(),
        script:
            "../workflow/scripts/lmad_debate.py"

    # The guarded resolver commits its own repair (lmad.stages.lmad.resolve_and_commit): a
    # separate commit job was one more process per iteration on the LMAD chain, for a step
    # without a model call.
    rule lmad_resolve:
        priority: LMAD_CHAIN_PRIORITY
        input:
            unpack(lmad_state),
            questions=lmad_unit_questions,
            samples=lmad_paths("generate"),
            localizations=lmad_paths("localize"),
            positions=lmad_paths("debate"),
            prompt=config["prompts"]["resolver"],
            relation_prompt=config["prompts"]["relation_check"],
            weights=lambda w: model_files(w.backbone),
        output:
            repairs=lmad_paths("resolve"),
            relations=lmad_paths("relation"),
            commits=lmad_paths("commit"),
            next_state=lmad_paths("state"),
        log:
            lmad_log("resolve"),
        benchmark:
            lmad_log("resolve", "benchmarks", "tsv")
        params:
            **lmad_params(),
            max_tokens=config["lmad"]["max_tokens"]["resolver"],
            iterations=config["lmad"]["iterations"],
            min_quote_words=config["lmad"]["guard"]["min_quote_words"],
            relation=config["lmad"]["guard"]["relation"],
            guard_last_iteration=config["lmad"]["guard_last_iteration"],
        conda:
            "../envs/pipeline.yaml"
        threads: lambda w: model_threads(w.backbone)
        resources:
            **model_resources(),
        script:
            "../workflow/scripts/lmad_resolve.py"

    rule lmad_predict:
        priority: LMAD_CHAIN_PRIORITY  # the chain's last link: the judge waits for it
        input:
            questions=question_tables,
            final_state=lmad_final_state,
            samples=lmad_iteration_tables("generate"),
            chains=lmad_iteration_tables("extract"),
            localizations=lmad_iteration_tables("localize"),
            positions=lmad_iteration_tables("debate"),
            repairs=lmad_iteration_tables("resolve"),
            relations=lmad_iteration_tables("relation"),
            commits=lmad_iteration_tables("commit"),
        output:
            predictions=prediction_outputs(LMAD_METHODS),
            trace=[layout.lmad_trace("{backbone}", w, m) for m in LMAD_METHODS for w in job_datasets()],
        log:
            prediction_log("lmad-methods"),
        params:
            methods=LMAD_METHODS,
            units=prediction_units(LMAD_METHODS),
        conda:
            "../envs/pipeline.yaml"
        script:
            "../workflow/scripts/lmad_predict.py"
