"""The swap-checked pairwise jury (docs/studies.md "Pairwise jury"): ``verdicts`` (the jurors'
requests, replies and summary), ``battery`` (its severity battery), ``stages`` (rules jury and
jury_table), ``plan`` (their inputs; on while config ``jury.pair`` names two methods)."""
