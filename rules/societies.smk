# Coverage-selected societies (When Debate Helps §4; docs/methods.md "Coverage-selected societies"): a pool
# of agents (temperature x persona x prompt variant, plus seeded weight-perturbed agents) answers
# every question; AC-Greedy, SC-Greedy, top-K and the default personas are selected per benchmark
# on its construction split (config societies.split) and evaluated on its held-out rest, the only
# questions the tables with a society column score (lmad.stages.societies). Off unless
# societies.enabled.


if SOCIETIES["enabled"]:
    if SOCIETIES["pool"]["perturbations"]:
        from lmad.backend_registry import backend as _backend, listing as _listing, names as _names

        for _b in config["backbones"]:
            if not _backend(config["models"][_b]["backend"]).perturbable:
                raise ValueError(f"societies.pool.perturbations: backbone {_b} ({config['models'][_b]['backend']}) "
                                 "cannot load perturbed weights; only the "
                                 f"{_listing(_names(perturbable=True, test_only=False))} backend can")

    localrules:
        society_split,
        society_select,
        paper_societies,

    rule society_split:
        input:
            questions=lambda w: [plan.questions.path(w.backbone, d) for d in DATASETS],
        output:
            split=layout.society("{backbone}", "split"),
        log:
            "logs/{backbone}/societies/split.log",
        params:
            **stage("lmad.stages.societies:society_split"),
            seed=config["seed"],
            size=SOCIETIES["split"]["size"],
            sizes=plan.societies.sizes(),
            construct_on=SOCIETIES["split"]["construct_on"],
        conda:
            "../envs/pipeline.yaml"
        shell:
            STAGE

    rule society_pool:
        input:
            questions=lambda w: [plan.questions.path(w.backbone, d) for d in DATASETS],
            split=layout.society("{backbone}", "split"),
            prompt=config["prompts"]["solver"],
            **BACKBONE_MODEL.input,
        output:
            pool=layout.society("{backbone}", "pool"),
        log:
            "logs/{backbone}/societies/pool.log",
        benchmark:
            "logs/benchmarks/{backbone}/societies/pool.tsv"
        params:
            **stage("lmad.stages.societies:society_pool"),
            **BACKBONE_MODEL.params,
            temperatures=SOCIETIES["pool"]["temperatures"],
            personas=SOCIETIES["pool"]["personas"],
            variants=SOCIETIES["pool"]["variants"],
            perturbations=SOCIETIES["pool"]["perturbations"],
            max_tokens=config["solver"]["max_tokens"],
            seed=config["seed"],
            call_seed=plan.call_seed,
        conda:
            "../envs/pipeline.yaml"
        threads: BACKBONE_MODEL.threads
        resources:
            **BACKBONE_MODEL.resources,
        shell:
            STAGE

    rule society_select:
        input:
            pool=layout.society("{backbone}", "pool"),
            split=layout.society("{backbone}", "split"),
        output:
            members=layout.society("{backbone}", "members"),
            evaluation=layout.society("{backbone}", "evaluation"),
            **({"sweep": layout.society("{backbone}", "sweep")} if plan.societies.sizes() else {}),
        log:
            "logs/{backbone}/societies/select.log",
        params:
            **stage("lmad.stages.societies:society_select"),
            size=SOCIETIES["split"]["size"],
            sizes=plan.societies.sizes(),
            construct_on=SOCIETIES["split"]["construct_on"],
            k=SOCIETIES["k"],
            sc_min_support=SOCIETIES["sc_min_support"],
            default_temperatures=config["agents"]["temperatures"],
        conda:
            "../envs/pipeline.yaml"
        shell:
            STAGE

    rule paper_societies:
        input:
            unpack(plan.societies.debate_inputs),
            evaluation=[layout.society(b, "evaluation") for b in BACKBONES],
            members=[layout.society(b, "members") for b in BACKBONES],
            sweeps=[layout.society(b, "sweep") for b in BACKBONES] if plan.societies.sizes() else [],
        output:
            csv=plan.paper.wdh_born("societies.csv"),
            md=plan.paper.wdh_born("societies.md"),
            debates_csv=plan.paper.wdh_born("society_debates.csv"),
            **({"sweep_csv": plan.paper.wdh_born("societies_sweep.csv"),
                "sweep_md": plan.paper.wdh_born("societies_sweep.md")} if plan.societies.sizes() else {}),
        log:
            "logs/paper/societies.log",
        params:
            **stage("lmad.stages.societies:societies_table"),
            size=SOCIETIES["split"]["size"],
        conda:
            "../envs/pipeline.yaml"
        shell:
            STAGE
