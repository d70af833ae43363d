# Localized multi-agent debate (paper §3): a fixed-maximum DAG of iterations, one rule per
# stage, each writing one Parquet table under results/{backbone}/{dataset}/{lmad_method}/iter{k}/.
# Questions that stopped pass through later iterations untouched; a stage with nothing to do
# writes an empty table without loading a model. The three commit policies (lmad = strict,
# lmad-concrete, lmad-always) are separate path branches that share identical calls through
# the call cache. Input functions live in rules/common.smk; stage bodies in lmad.stages.lmad.


rule lmad_generate:
    input:
        unpack(lmad_generate_inputs),
        questions="results/data/{dataset}.parquet",
        prompt=config["prompts"]["solver"],
        weights=lambda w: model_files(w.backbone),
    output:
        samples="results/{backbone}/{dataset}/{lmad_method}/iter{iteration}/generate.parquet",
    log:
        "logs/{backbone}/{dataset}/{lmad_method}/iter{iteration}/generate.log",
    benchmark:
        "benchmarks/{backbone}/{dataset}/{lmad_method}/iter{iteration}/generate.tsv"
    params:
        model=lambda w: model_spec(w.backbone),
        cache_dir=config["cache_dir"],
        iteration=lambda w: int(w.iteration),
        method=lambda w: w.lmad_method,
        temperatures=config["agents"]["temperatures"],
        max_tokens=config["solver"]["max_tokens"],
        seed=config["seed"],
    conda:
        "../envs/pipeline.yaml"
    threads: lambda w: model_threads(w.backbone)
    resources:
        **model_resources(),
    script:
        "../workflow/scripts/lmad_generate.py"


rule lmad_extract:
    input:
        questions="results/data/{dataset}.parquet",
        samples="results/{backbone}/{dataset}/{lmad_method}/iter{iteration}/generate.parquet",
        prompt=config["prompts"]["extractor"],
        weights=lambda w: model_files(w.backbone),
    output:
        chains="results/{backbone}/{dataset}/{lmad_method}/iter{iteration}/extract.parquet",
    log:
        "logs/{backbone}/{dataset}/{lmad_method}/iter{iteration}/extract.log",
    benchmark:
        "benchmarks/{backbone}/{dataset}/{lmad_method}/iter{iteration}/extract.tsv"
    params:
        model=lambda w: model_spec(w.backbone),
        cache_dir=config["cache_dir"],
        iteration=lambda w: int(w.iteration),
        max_tokens=config["lmad"]["max_tokens"]["extractor"],
        max_nodes=config["lmad"]["nodes"]["max_nodes"],
        max_node_words=config["lmad"]["nodes"]["max_words"],
    conda:
        "../envs/pipeline.yaml"
    threads: lambda w: model_threads(w.backbone)
    resources:
        **model_resources(),
    script:
        "../workflow/scripts/lmad_extract.py"


rule lmad_localize:
    input:
        unpack(lmad_state),
        questions="results/data/{dataset}.parquet",
        chains="results/{backbone}/{dataset}/{lmad_method}/iter{iteration}/extract.parquet",
        prompt=config["prompts"]["localizer"],
        weights=lambda w: model_files(w.backbone),
    output:
        localizations="results/{backbone}/{dataset}/{lmad_method}/iter{iteration}/localize.parquet",
    log:
        "logs/{backbone}/{dataset}/{lmad_method}/iter{iteration}/localize.log",
    benchmark:
        "benchmarks/{backbone}/{dataset}/{lmad_method}/iter{iteration}/localize.tsv"
    params:
        model=lambda w: model_spec(w.backbone),
        cache_dir=config["cache_dir"],
        iteration=lambda w: int(w.iteration),
        max_tokens=config["lmad"]["max_tokens"]["localizer"],
    conda:
        "../envs/pipeline.yaml"
    threads: lambda w: model_threads(w.backbone)
    resources:
        **model_resources(),
    script:
        "../workflow/scripts/lmad_localize.py"


rule lmad_debate:
    input:
        unpack(lmad_state),
        questions="results/data/{dataset}.parquet",
        localizations="results/{backbone}/{dataset}/{lmad_method}/iter{iteration}/localize.parquet",
        prompt=config["prompts"]["debater"],
        weights=lambda w: model_files(w.backbone),
    output:
        positions="results/{backbone}/{dataset}/{lmad_method}/iter{iteration}/debate.parquet",
    log:
        "logs/{backbone}/{dataset}/{lmad_method}/iter{iteration}/debate.log",
    benchmark:
        "benchmarks/{backbone}/{dataset}/{lmad_method}/iter{iteration}/debate.tsv"
    params:
        model=lambda w: model_spec(w.backbone),
        cache_dir=config["cache_dir"],
        iteration=lambda w: int(w.iteration),
        rounds=config["lmad"]["local_rounds"],
        temperatures=config["agents"]["temperatures"],
        seed=config["seed"],
        max_tokens=config["lmad"]["max_tokens"]["debater"],
    conda:
        "../envs/pipeline.yaml"
    threads: lambda w: model_threads(w.backbone)
    resources:
        **model_resources(),
    script:
        "../workflow/scripts/lmad_debate.py"


rule lmad_resolve:
    input:
        unpack(lmad_state),
        questions="results/data/{dataset}.parquet",
        localizations="results/{backbone}/{dataset}/{lmad_method}/iter{iteration}/localize.parquet",
        positions="results/{backbone}/{dataset}/{lmad_method}/iter{iteration}/debate.parquet",
        prompt=config["prompts"]["resolver"],
        weights=lambda w: model_files(w.backbone),
    output:
        repairs="results/{backbone}/{dataset}/{lmad_method}/iter{iteration}/resolve.parquet",
    log:
        "logs/{backbone}/{dataset}/{lmad_method}/iter{iteration}/resolve.log",
    benchmark:
        "benchmarks/{backbone}/{dataset}/{lmad_method}/iter{iteration}/resolve.tsv"
    params:
        model=lambda w: model_spec(w.backbone),
        cache_dir=config["cache_dir"],
        iteration=lambda w: int(w.iteration),
        max_tokens=config["lmad"]["max_tokens"]["resolver"],
    conda:
        "../envs/pipeline.yaml"
    threads: lambda w: model_threads(w.backbone)
    resources:
        **model_resources(),
    script:
        "../workflow/scripts/lmad_resolve.py"


rule lmad_commit:
    input:
        unpack(lmad_state),
        questions="results/data/{dataset}.parquet",
        samples="results/{backbone}/{dataset}/{lmad_method}/iter{iteration}/generate.parquet",
        repairs="results/{backbone}/{dataset}/{lmad_method}/iter{iteration}/resolve.parquet",
    output:
        commits="results/{backbone}/{dataset}/{lmad_method}/iter{iteration}/commit.parquet",
        next_state="results/{backbone}/{dataset}/{lmad_method}/iter{iteration}/state.parquet",
    log:
        "logs/{backbone}/{dataset}/{lmad_method}/iter{iteration}/commit.log",
    params:
        method=lambda w: w.lmad_method,
        iteration=lambda w: int(w.iteration),
        iterations=config["lmad"]["iterations"],
        min_quote_words=config["lmad"]["guard"]["min_quote_words"],
    conda:
        "../envs/pipeline.yaml"
    script:
        "../workflow/scripts/lmad_commit.py"


rule lmad_predict:
    input:
        questions="results/data/{dataset}.parquet",
        final_state=lmad_final_state,
        samples=lmad_iteration_tables("generate"),
        chains=lmad_iteration_tables("extract"),
        localizations=lmad_iteration_tables("localize"),
        positions=lmad_iteration_tables("debate"),
        repairs=lmad_iteration_tables("resolve"),
        commits=lmad_iteration_tables("commit"),
    output:
        predictions="results/{backbone}/{dataset}/predictions/{lmad_method}.parquet",
        trace="results/{backbone}/{dataset}/{lmad_method}/trace.parquet",
    log:
        "logs/{backbone}/{dataset}/{lmad_method}/predict.log",
    params:
        method=lambda w: w.lmad_method,
    conda:
        "../envs/pipeline.yaml"
    script:
        "../workflow/scripts/lmad_predict.py"
