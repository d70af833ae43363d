"""Linear layers computed as ``W @ xᵀ`` for the few rows of a decode step.

A decode step multiplies each weight matrix by one row per live request. torch's CPU ``linear``
(``x @ Wᵀ``) reads the weights at a fraction of the memory's speed when there are only a few
rows: on 2 cores (AMD EPYC, AVX2), a whole SmolLM2-135M step's products, weights streamed from
memory, took 100–124 ms at 2–8 rows and 43–88 ms as ``W @ xᵀ``, the same arithmetic with the
operands' roles swapped in the BLAS call. At 1 row and from 12 rows on the two give the same
bits; at 2–11 rows they differ in the last bits, where torch's own ``linear`` already gives other
bits than for the same rows in a larger batch (``benchmarks/decode_linear.py``). More rows (a
prefill) keep ``linear``, as fast or faster there. fp32 only: the one dtype measured.
"""
from __future__ import annotations

import torch

#: the most rows (tokens in the product) for which ``W @ xᵀ`` is taken
MAX_ROWS = 16


def decode_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``torch.nn.functional.linear(x, weight, bias)``, as ``weight @ xᵀ`` for 1–16 rows."""
    rows = x.numel() // x.shape[-1] if x.shape[-1] else 0
    if not 1 <= rows <= MAX_ROWS:
        return torch.nn.functional.linear(x, weight, bias)
    out = swapped_linear(x.reshape(rows, x.shape[-1]), weight)
    if bias is not None:
        out = out + bias
    return out.reshape(*x.shape[:-1], weight.shape[0])


def swapped_linear(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """``x @ weightᵀ`` for a 2-D ``x``, computed as ``(weight @ xᵀ)ᵀ``; contiguous, since callers
    view the output as heads."""
    return torch.mm(weight, x.t()).t().contiguous()


def use_decode_linear(model: torch.nn.Module) -> int:
    """Route every ``nn.Linear`` of ``model`` through ``decode_linear``; the number routed."""
    routed = 0
    for module in model.modules():
        if type(module) is torch.nn.Linear:
            module.forward = _forward_of(module)
            routed += 1
    return routed


def use_torch_linear(model: torch.nn.Module) -> None:
    """Undo ``use_decode_linear``: every layer back to its class's ``forward``."""
    for module in model.modules():
        module.__dict__.pop("forward", None)


def _forward_of(module: torch.nn.Linear):
    def forward(x: torch.Tensor) -> torch.Tensor:
        return decode_linear(x, module.weight, module.bias)

    return forward
