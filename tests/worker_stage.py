"""A stage for tests/test_worker.py: the warm worker's child imports it by name."""
import gc
import json
import os
import sys
import time


def probe(out, provenance, mode="ok", model=None):
    print("to stdout")
    print("to stderr", file=sys.stderr)
    if mode == "raise":
        raise RuntimeError("the stage failed on purpose")
    if mode == "exit":
        raise SystemExit(3)
    if mode == "sleep":
        time.sleep(30)
    with open(out, "w") as f:
        json.dump({"pid": os.getpid(), "ppid": os.getppid(), "cwd": os.getcwd(), "env": os.environ.get("PROBE"),
                   "rule": provenance["rule"],
                   "heap": [gc.get_freeze_count() > 0, list(gc.get_threshold())],
                   # what the process had imported before the stage ran: the model worker's runtime
                   "torch": sys.modules["torch"].get_num_threads() if "torch" in sys.modules else None}, f)


def complete(out, provenance, model, prompts):
    """The embedded engine's replies to ``prompts`` (greedy, sampled, and under a grammar)."""
    from lmad.backends.base import ChatRequest
    from lmad.backends.transformers_backend import TransformersBackend

    engine = TransformersBackend(model["name"], model["model"], batch_size=4, threads=model.get("threads"))
    requests = [ChatRequest(messages=(("user", p),), temperature=t, seed=k, max_tokens=16, constraint=c)
                for k, p in enumerate(prompts)
                for t, c in ((0.0, None), (0.9, None), (0.0, {"choice": ["yes", "no"]}))]
    with open(out, "w") as f:
        json.dump({"ppid": os.getppid(), "texts": [c.text for c in engine.generate(requests)],
                   "threads": sys.modules["torch"].get_num_threads()}, f)
