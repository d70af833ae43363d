"""Rows of a batch that begin with the same tokens, found so their prefix is prefilled once.

On CPU the embedded model's cost is prefill: a multi-hop prompt is ~1,500 tokens of passages and
a few dozen of its own. The agents of one question share those passages (and the proposals of a
question are the same prompt at three temperatures), so a batch prefills each shared prefix once
and copies its KV cache to the rows. Pure functions over token lists; the backend does the rest.
"""
from __future__ import annotations

from os.path import commonprefix
from typing import Sequence

# a shared prefix shorter than this saves less than the second forward pass costs
MIN_SHARED = 64
# the rows a group may hold (keeps the segmentation linear in the batch)
MAX_GROUP = 64


def prefix_groups(ids: Sequence[Sequence[int]], min_shared: int = MIN_SHARED) -> list[tuple[list[int], int]]:
    """Groups of row indices that share a prefix, with that prefix's length: ``[(rows, length)]``.

    Every row is in exactly one group; a group of one row has length 0 (nothing shared). A length
    leaves each row at least one token of its own, since the row's next-token logits come from its
    last prompt token. Rows sorted lexicographically are segmented into runs that maximize the
    tokens not prefilled again, ``(len(run) - 1) * shared``, over runs sharing ``min_shared`` or more.
    """
    order = sorted(range(len(ids)), key=lambda i: tuple(ids[i]))
    n = len(order)
    # lcp[k]: tokens rows order[k] and order[k+1] share, at most one short of either row
    # (commonprefix compares any sequences element by element)
    lcp = [min(len(commonprefix([ids[order[k]], ids[order[k + 1]]])), len(ids[order[k]]) - 1, len(ids[order[k + 1]]) - 1)
           for k in range(n - 1)]
    best = [0] * (n + 1)  # best[j]: the most tokens saved over the first j sorted rows
    cut = [0] * (n + 1)   # where the last run of that best starts
    for j in range(1, n + 1):
        best[j], cut[j] = best[j - 1], j - 1  # row j-1 alone
        shared = None
        for i in range(j - 2, max(-1, j - 1 - MAX_GROUP), -1):  # run order[i:j]
            shared = lcp[i] if shared is None else min(shared, lcp[i])
            if shared < min_shared:
                break
            saved = best[i] + (j - 1 - i) * shared
            if saved > best[j]:
                best[j], cut[j] = saved, i
    groups: list[tuple[list[int], int]] = []
    j = n
    while j > 0:
        i = cut[j]
        rows = order[i:j]
        shared = min(lcp[i:j - 1]) if len(rows) > 1 else 0
        groups.append((rows, shared))
        j = i
    return groups[::-1]


def prefill_cost(ids: Sequence[Sequence[int]], groups: list[tuple[list[int], int]]) -> int:
    """Token slots (rows x padded width) a two-pass prefill of ``groups`` fills: one pass over the
    groups' prefixes, one over every row's own tokens after its prefix."""
    prefixes = [length for _, length in groups if length]
    suffix = max(len(ids[r]) - length for rows, length in groups for r in rows)
    return len(prefixes) * max(prefixes, default=0) + len(ids) * suffix


def prefill_plan(ids: Sequence[Sequence[int]], min_shared: int = MIN_SHARED):
    """``(groups, plain, planned)``: the groups a batch's prefill shares prefixes by (None where one
    padded pass is cheapest), and the token slots one padded pass fills and the plan fills.

    A row that shares nothing either goes whole into the second pass or, all but its last token,
    into the first beside the shared prefixes: the cheaper of the two (a long lone row in the
    second pass would widen every row's padding there)."""
    plain = len(ids) * max(map(len, ids))
    groups = prefix_groups(ids, min_shared)
    lone_first = [(rows, length or len(ids[rows[0]]) - 1) for rows, length in groups]
    cost, plan = min((prefill_cost(ids, g), k) for k, g in enumerate((groups, lone_first)))
    if cost >= plain:
        return None, plain, plain
    return (groups, lone_first)[plan], plain, cost


def grouped_order(ids: Sequence[Sequence[int]], min_shared: int = MIN_SHARED) -> list[int]:
    """Row indices with each group's rows together and groups by their longest prompt, so that a
    length-sorted split into decode batches keeps the rows that share a prefix in one batch."""
    groups = prefix_groups(ids, min_shared)
    groups.sort(key=lambda g: (max(len(ids[r]) for r in g[0]), min(g[0])))
    return [r for rows, _ in groups for r in sorted(rows)]
