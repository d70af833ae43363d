# The "matched tokens" self-consistency baseline (method sc-matched; docs/methods.md "Matched-tokens SC"):
# as many solver samples as a target method's generated tokens per question buy, one job per
# backbone covering every dataset in one batch (lmad.stages.matched); rule predict votes over them.


if "sc-matched" in config["methods"]:
    if config["sc_matched"]["target"] not in config["methods"]:
        raise ValueError(f"sc_matched.target: {config['sc_matched']['target']} is not in methods")

    rule sc_matched:
        input:
            questions=plan.questions.tables,
            proposals=plan.questions.proposal_tables,
            target=lambda w: [layout.predictions(w.backbone, d, config["sc_matched"]["target"])
                              for d in plan.job_datasets(w)],
            prompt=config["prompts"]["solver"],
            **BACKBONE_MODEL.input,
        output:
            samples=[layout.samples("{backbone}", d, "matched") for d in plan.job_datasets()],
        log:
            plan.job_log("generate", "matched"),
        benchmark:
            plan.job_log("generate", "matched", "logs/benchmarks", "tsv")
        params:
            **stage("lmad.stages.matched:sc_matched"),
            **BACKBONE_MODEL.params,
            target_method=config["sc_matched"]["target"],
            temperatures=config["agents"]["temperatures"],
            max_samples=config["sc_matched"]["max_samples"],
            max_tokens=config["solver"]["max_tokens"],
            seed=plan.call_seed,
        conda:
            "../envs/pipeline.yaml"
        threads: BACKBONE_MODEL.threads
        resources:
            **BACKBONE_MODEL.resources,
        shell:
            STAGE
