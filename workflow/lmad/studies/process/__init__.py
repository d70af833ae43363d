"""The process metrics (docs/studies.md "Process metrics"): ``metrics`` (the rubric and CPL / AME /
CMP), ``stages`` (rules process_scores, rubric_validation, process_table), ``plan`` (their inputs;
on with config ``process.rubric`` and a debating method)."""
