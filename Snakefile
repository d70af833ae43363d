from snakemake.utils import min_version

min_version("9.0")


# The demo's config applies only when the command line names no --configfile: a user's own
# config stands alone, and an overlay names the config it extends
# (--configfile config/config.yaml config/readout.yaml).
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


include: "rules/common.smk"
include: "rules/data.smk"
include: "rules/shards.smk"
include: "rules/generate.smk"
include: "rules/judge.smk"
include: "rules/analysis.smk"
include: "rules/lmad.smk"
include: "rules/debate.smk"
include: "rules/manifest.smk"
include: "rules/paper.smk"
include: "rules/societies.smk"
include: "rules/matched.smk"


# Each optional study's rules (lmad.studies: its folder, its line in STUDIES).
for study_rules in plan.study_rules():

    include: study_rules


# Every rule whose command is STAGE gets the job line its script reads (lmad.stage_command).
attach_stage_jobs(workflow.rules, STAGE_RUNNER)


# One engine per model per run: a served model's stage jobs are clients of its server, so
# under SLURM they run on the submit host, and their server is the model's one SLURM job.
workflow.localrules(*served_client_rules())


rule all:
    input:
        plan.all_outputs(),
    default_target: True


refuse_report_before_run()


onstart:
    start_warm_worker()
    serve_on_cluster()
    check_slurm_placement()


onsuccess:
    stop_warm_worker()
    stop_served_models()
    cancel_scheduler_timers()


onerror:
    stop_warm_worker()
    stop_served_models()
    cancel_scheduler_timers()
