rule prepare_data:
    input:
        dataset_source,
    output:
        questions=layout.questions("{dataset}"),
    log:
        "logs/prepare_data/{dataset}.log",
    wildcard_constraints:
        dataset=DATASET_NAMES,
    params:
        **stage("lmad.stages.prepare:prepare_data"),
        spec=lambda w: plan.questions.dataset_spec(w.dataset),
        base_dir=run_path(workflow.basedir),
    conda:
        "../envs/pipeline.yaml"
    shell:
        STAGE


rule backbone_questions:
    input:
        unpack(plan.questions.backbone_subset_inputs),
    output:
        questions=layout.questions("{dataset}", "{backbone}"),
    log:
        "logs/{backbone}/backbone_questions/{dataset}.log",
    params:
        **stage("lmad.stages.prepare:backbone_questions"),
        n=plan.questions.backbone_n_of,
        seed=config["seed"],
    conda:
        "../envs/pipeline.yaml"
    shell:
        STAGE


rule convert_model:
    output:
        model_dir=directory("resources/models/{model}"),
    log:
        "logs/convert_model/{model}.log",
    params:
        **stage("lmad.stages.prepare:convert_model"),
        name=lambda w: w.model,
        gguf=lambda w: config["models"][w.model]["gguf"],
    conda:
        "../envs/pipeline.yaml"
    shell:
        STAGE
