"""``dtype: auto`` for the embedded (CPU) backend: bfloat16 where the CPU has bf16 matrix
instructions, float32 elsewhere.

Chosen from what the CPU advertises, not from a timing probe: the choice is part of every cache
key (``identity.settings_identity``), so it must come out the same each time on one machine,
also on busy cores where a probe would time anything. Where the CPU has AMX or AVX-512 BF16, a
2048² bf16 matmul ran 6.2× faster than fp32 on 2 threads; without them bf16 was about 4× slower
(docs/benchmarks.md "The embedded engine").
"""
from __future__ import annotations

import functools
import platform
from pathlib import Path

#: x86 CPU flags (``/proc/cpuinfo``) under which torch runs bf16 matmuls natively
BF16_FLAGS = frozenset({"amx_bf16", "avx512_bf16"})


def cpu_flags(cpuinfo: str) -> set[str]:
    """The flags of the first processor listed in a ``/proc/cpuinfo`` text."""
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() in ("flags", "Features"):
            return set(value.split())
    return set()


def fast_dtype(cpuinfo: str | None, machine: str) -> str:
    """The dtype ``auto`` means on a CPU described by ``cpuinfo`` (None: unreadable) and
    ``platform.machine()``: bfloat16 on x86 with a bf16 instruction set, else float32."""
    if cpuinfo is None or machine.lower() not in ("x86_64", "amd64"):
        return "float32"
    return "bfloat16" if cpu_flags(cpuinfo) & BF16_FLAGS else "float32"


@functools.cache
def machine_dtype() -> str:
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text()
    except OSError:
        cpuinfo = None
    return fast_dtype(cpuinfo, platform.machine())


def resolve_dtype(dtype: str | None) -> str:
    """A transformers model entry's dtype as it loads: ``auto`` (or none) becomes this machine's."""
    return machine_dtype() if dtype in (None, "auto") else dtype
