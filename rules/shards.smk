# Sharding (config `shards: N`, docs/running.md "Sharding"): each dataset's questions split into
# N shards, named {dataset}.shard{s}, that every question-level rule treats as datasets of
# their own (separate jobs, data-parallel over GPUs or nodes); any per-question table a
# judge or paper rule reads under results/{backbone}/{dataset}/ is merged from its shards.
# Stage code in lmad.stages.shards.


if SHARDS > 1:

    localrules:
        shard_data,
        merge_shards,

    rule shard_data:
        input:
            questions=layout.questions("{dataset}"),
        output:
            shard_questions=layout.questions("{dataset}.shard{shard}"),
        log:
            "logs/shard_data/{dataset}.shard{shard}.log",
        wildcard_constraints:
            dataset=DATASET_NAMES,
            shard=r"\d+",
        params:
            **stage("lmad.stages.shards:shard_data"),
            shard=lambda w: int(w.shard),
            shards=SHARDS,
        conda:
            "../envs/pipeline.yaml"
        shell:
            STAGE

    rule merge_shards:
        input:
            parts=plan.questions.shard_parts,
        output:
            merged=layout.per_question("{backbone}", "{dataset}", "{table}"),
        log:
            "logs/{backbone}/{dataset}/merge/{table}.log",
        wildcard_constraints:
            dataset=DATASET_NAMES,
            # per-question tables live in subfolders (predictions/, samples/, <method>/)
            table=r"[^/]+/.+",
        params:
            **stage("lmad.stages.shards:merge_shards"),
        conda:
            "../envs/pipeline.yaml"
        shell:
            STAGE
