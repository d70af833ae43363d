"""Multi-agent debate on multi-hop QA: LMAD, its baselines, judging and analysis.

Every Snakemake rule calls one function of this package through a thin script in
``workflow/scripts``.
"""

__version__ = "0.1.0"
