"""Opinion questions (docs/task-families.md "Scoring"): no gold, so a table of each method's answer
distribution against every surveyed country's instead of accuracy: ``stages`` (rule opinion_table),
``plan`` (its inputs; on when a dataset's questions are opinions)."""
