"""Finalizers and round-level controls (docs/methods.md "Finalizers and round-level controls"):
``finalize`` (the finalizers), ``stages`` (rule finalizers), ``readout_stages`` (rules paper_readout,
paper_headroom_lift), ``plan`` (their inputs; on with config ``finalizers.enabled``)."""
