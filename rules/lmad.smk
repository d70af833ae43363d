# Localized multi-agent debate (paper §3): a fixed-maximum DAG of iterations, one rule per
# stage. Each stage job covers one (backbone, iteration) and every (dataset, LMAD method)
# unit, so all active questions x agents go to the model as one batch and the three commit
# policies (lmad = strict, lmad-concrete, lmad-always) compute their identical calls once.
# Generations stay per unit (lmad.layout.lmad_table: results/{backbone}/{dataset}/{method}/iter{k}/generate.parquet,
# what every reader of a method's rounds takes); every other stage table of an iteration is one file of
# all units (lmad.layout.lmad_iteration: results/{backbone}/lmad/iter{k}/{stage}.parquet): one file, not
# one per unit, for Snakemake to match and for the jobs to read and write.
# Questions that stopped pass through later iterations untouched; a stage with nothing to
# do writes empty tables without loading a model. Input functions are plan.lmad's (lmad.plan.lmad_stages);
# stage bodies in lmad.stages.localized_debate. A method with a selected society (lmad+ac-greedy) is one
# more unit; the society file is then an input of generate and debate (its agents' stages).
# Graph LMAD (lmad-dag, …) is more units too: extraction asks its premise prompt, localization
# runs on the claim graphs without a call (lmad.protocols.localized_debate.premises, graph_localize).


if LMAD_METHODS:

    localrules:
        lmad_predict,

    rule lmad_generate:
        priority: LMAD_CHAIN_PRIORITY
        input:
            unpack(plan.lmad.generate_inputs),
            questions=plan.lmad.unit_questions,
            prompt=config["prompts"]["solver"],
            **BACKBONE_MODEL.input,
        output:
            samples=plan.lmad.unit_tables("generate"),
        log:
            plan.lmad.log("generate"),
        benchmark:
            plan.lmad.log("generate", "logs/benchmarks", "tsv")
        params:
            **stage("lmad.stages.localized_debate:generate"),
            **plan.lmad.params(),
            **BACKBONE_MODEL.params,
            temperatures=lambda w: plan.models.agent_temperatures(w.backbone),
            max_tokens=config["solver"]["max_tokens"],
            seed=plan.call_seed,
        conda:
            "../envs/pipeline.yaml"
        threads: BACKBONE_MODEL.threads
        resources:
            **BACKBONE_MODEL.resources,
        shell:
            STAGE

    rule lmad_extract:
        priority: LMAD_CHAIN_PRIORITY
        input:
            questions=plan.lmad.unit_questions,
            samples=plan.lmad.unit_tables("generate"),
            prompt=config["prompts"]["extractor"],
            **plan.lmad.premise_prompt(),
            **BACKBONE_MODEL.input,
        output:
            chains=plan.lmad.unit_tables("extract"),
        log:
            plan.lmad.log("extract"),
        benchmark:
            plan.lmad.log("extract", "logs/benchmarks", "tsv")
        params:
            **stage("lmad.stages.localized_debate:extract"),
            **plan.lmad.params(),
            **BACKBONE_MODEL.params,
            max_tokens=config["lmad"]["max_tokens"]["extractor"],
            max_nodes=config["lmad"]["nodes"]["max_nodes"],
            max_node_words=config["lmad"]["nodes"]["max_words"],
            iterations=config["lmad"]["iterations"],
            guard_last_iteration=config["lmad"]["guard_last_iteration"],
        conda:
            "../envs/pipeline.yaml"
        threads: BACKBONE_MODEL.threads
        resources:
            **BACKBONE_MODEL.resources,
        shell:
            STAGE

    rule lmad_localize:
        priority: LMAD_CHAIN_PRIORITY
        input:
            unpack(plan.lmad.state),
            questions=plan.lmad.unit_questions,
            chains=plan.lmad.unit_tables("extract"),
            prompt=config["prompts"]["localizer"],
            **BACKBONE_MODEL.input,
        output:
            localizations=plan.lmad.unit_tables("localize"),
        log:
            plan.lmad.log("localize"),
        benchmark:
            plan.lmad.log("localize", "logs/benchmarks", "tsv")
        params:
            **stage("lmad.stages.localized_debate:localize"),
            **plan.lmad.params(),
            **BACKBONE_MODEL.params,
            max_tokens=config["lmad"]["max_tokens"]["localizer"],
            **plan.lmad.graph_params(),
        conda:
            "../envs/pipeline.yaml"
        threads: BACKBONE_MODEL.threads
        resources:
            **BACKBONE_MODEL.resources,
        shell:
            STAGE

    rule lmad_debate:
        priority: LMAD_CHAIN_PRIORITY
        input:
            unpack(plan.lmad.state),
            unpack(plan.lmad.society),
            questions=plan.lmad.unit_questions,
            localizations=plan.lmad.unit_tables("localize"),
            prompt=config["prompts"]["debater"],
            **plan.lmad.tone_prompts(),
            **BACKBONE_MODEL.input,
        output:
            positions=plan.lmad.unit_tables("debate"),
        log:
            plan.lmad.log("debate"),
        benchmark:
            plan.lmad.log("debate", "logs/benchmarks", "tsv")
        params:
            **stage("lmad.stages.localized_debate:debate"),
            **plan.lmad.params(),
            **BACKBONE_MODEL.params,
            rounds=config["lmad"]["local_rounds"],
            temperatures=lambda w: plan.models.agent_temperatures(w.backbone),
            seed=plan.call_seed,
            max_tokens=config["lmad"]["max_tokens"]["debater"],
        conda:
            "../envs/pipeline.yaml"
        threads: BACKBONE_MODEL.threads
        resources:
            **BACKBONE_MODEL.resources,
        shell:
            STAGE

    # The guarded resolver commits its own repair (lmad.stages.localized_debate.resolve_and_commit): a
    # separate commit job was one more process per iteration on the LMAD chain, for a step
    # without a model call.
    rule lmad_resolve:
        priority: LMAD_CHAIN_PRIORITY
        input:
            unpack(plan.lmad.state),
            questions=plan.lmad.unit_questions,
            samples=plan.lmad.unit_tables("generate"),
            localizations=plan.lmad.unit_tables("localize"),
            positions=plan.lmad.unit_tables("debate"),
            prompt=config["prompts"]["resolver"],
            relation_prompt=config["prompts"]["relation_check"],
            **BACKBONE_MODEL.input,
        output:
            repairs=plan.lmad.unit_tables("resolve"),
            relations=plan.lmad.unit_tables("relation"),
            commits=plan.lmad.unit_tables("commit"),
            next_state=plan.lmad.unit_tables("state"),
        log:
            plan.lmad.log("resolve"),
        benchmark:
            plan.lmad.log("resolve", "logs/benchmarks", "tsv")
        params:
            **stage("lmad.stages.localized_debate:resolve_and_commit"),
            **plan.lmad.params(),
            **BACKBONE_MODEL.params,
            max_tokens=config["lmad"]["max_tokens"]["resolver"],
            iterations=config["lmad"]["iterations"],
            min_quote_words=config["lmad"]["guard"]["min_quote_words"],
            relation=config["lmad"]["guard"]["relation"],
            guard_last_iteration=config["lmad"]["guard_last_iteration"],
        conda:
            "../envs/pipeline.yaml"
        threads: BACKBONE_MODEL.threads
        resources:
            **BACKBONE_MODEL.resources,
        shell:
            STAGE

    rule lmad_predict:
        priority: LMAD_CHAIN_PRIORITY  # the chain's last link: the judge waits for it
        input:
            questions=plan.questions.tables,
            final_state=plan.lmad.final_state,
            samples=plan.lmad.every_iteration_by_method("generate"),
            chains=plan.lmad.every_iteration_by_method("extract"),
            localizations=plan.lmad.every_iteration_by_method("localize"),
            positions=plan.lmad.every_iteration_by_method("debate"),
            repairs=plan.lmad.every_iteration_by_method("resolve"),
            relations=plan.lmad.every_iteration_by_method("relation"),
            commits=plan.lmad.every_iteration_by_method("commit"),
        output:
            predictions=plan.questions.prediction_outputs(LMAD_METHODS),
            trace=[layout.lmad_trace("{backbone}", w, m) for m in LMAD_METHODS for w in plan.job_datasets()],
        log:
            plan.questions.prediction_log("lmad-methods"),
        params:
            **stage("lmad.stages.localized_debate:predict_methods"),
            methods=LMAD_METHODS,
            units=plan.questions.prediction_units(LMAD_METHODS),
        conda:
            "../envs/pipeline.yaml"
        shell:
            STAGE
