"""Multi-agent debate on multi-hop QA: LMAD, its baselines, judging and analysis.

Every Snakemake rule calls one function of this package, the stage its params name, through
the one script ``workflow/scripts/stage.py`` (the rules' command, lmad.stage_command).
"""

__version__ = "0.1.0"
