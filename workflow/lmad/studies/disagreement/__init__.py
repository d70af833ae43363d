"""The disagreement layers (the layered-disagreement paper) on the pipeline's debates (docs/studies.md
"Disagreement layers"). Their labels and strict parsers sit below the protocols, since the debate
engine asks layer A in its rounds: ``lmad.disagreement_labels``.

``local``    LMAD's local-debate turns rebuilt from its stage tables (layers A and B on LMAD);
``pushback`` layer B: the blind judge's request and its authored known-answer battery;
``probe``    layer D: the stance in a debater's own next-token distribution;
``tables``   the per method x tone x round table (results/paper/disagreement.{csv,md});
``stages``, ``probe_stages``  the rules' stage functions; ``plan`` their inputs (on with config
``disagreement.self_report``, ``pushback`` or ``probe``).
"""
