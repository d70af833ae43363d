"""A stand-in for the ``vllm`` package, for tests only: enough of its OpenAI server for
the workflow's served mode (``lmad.backends.serve``) to start, find and stop it. It is put on
``PYTHONPATH`` of the test's subprocesses only, never imported by the test process."""
__version__ = "0.0+fake"
