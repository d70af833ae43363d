"""Seeded weight perturbation ("neural thicket" agents, When Debate Helps): a model whose every weight
gets independent Gaussian noise, w ← w + scale · N(0, 1), drawn from one ``torch.Generator``
seeded by ``seed`` over the parameters in name order — the same (seed, scale) gives the same
weights on every machine and run. The perturbation is part of the model's identity (cache keys),
so a perturbed agent never shares a cached call with the unperturbed model."""
from __future__ import annotations


def perturb_suffix(perturb: dict | None) -> str:
    if not perturb:
        return ""
    return f"+perturb=seed{int(perturb['seed'])}:scale{float(perturb['scale']):g}"


def perturb_weights(model, seed: int, scale: float) -> int:
    """Add seeded noise to every floating-point parameter in place; returns how many were changed."""
    import torch

    if scale == 0:
        return 0
    gen = torch.Generator().manual_seed(int(seed))
    changed = 0
    with torch.no_grad():
        for _, p in sorted(model.named_parameters(), key=lambda kv: kv[0]):
            if p.is_floating_point():
                noise = torch.randn(p.shape, generator=gen, dtype=torch.float32)
                p.add_(noise.to(p.dtype) * float(scale))
                changed += 1
    return changed
