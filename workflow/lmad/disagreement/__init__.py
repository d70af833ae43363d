"""Seed 003's disagreement layers on the pipeline's debates (README "Disagreement layers").

``labels``  the structured labels and their strict parsers (layer A self-report, layer B
            pushback judge), shared by the engine, the judge stage and the tables;
``pushback`` layer B: the blind judge's request and its authored known-answer battery;
``tables``  the per method x tone x round table (results/paper/disagreement.{csv,md}).
"""
