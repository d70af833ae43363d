"""Debate protocols, one package each, chosen by method name in the config.

A protocol package holds the pure pieces of its method (prompt requests, parsers,
checks, state transitions); the Snakemake stage functions in ``lmad.stages`` read and
write the Parquet tables around them. Adding a protocol does not touch the others.
"""
