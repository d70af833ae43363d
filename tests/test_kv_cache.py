"""The reserved KV cache holds exactly what transformers' DynamicCache holds, through any
sequence of growth (prefill, decode steps, past its reserve) and row selection (compaction,
a shared prefix repeated to its rows)."""
import torch
from hypothesis import given, settings, strategies as st
from transformers.cache_utils import DynamicLayer

from lmad.backends.kv_cache import ReservedCache, ReservedLayer

steps = st.lists(st.one_of(st.tuples(st.just("grow"), st.integers(1, 7)),
                           st.tuples(st.just("select"), st.lists(st.integers(0, 50), min_size=1, max_size=5))),
                 max_size=12)


@settings(max_examples=60, deadline=None)
@given(steps, st.integers(0, 4), st.integers(1, 3))
def test_a_reserved_layer_holds_what_a_dynamic_layer_holds(ops, reserve, rows):
    gen = torch.Generator().manual_seed(0)
    ours, theirs = ReservedLayer(reserve), DynamicLayer()
    for op, arg in ops:
        if op == "grow":
            k, v = (torch.randn(rows, 2, arg, 3, generator=gen) for _ in range(2))
            got, want = ours.update(k, v), theirs.update(k, v)
            assert all(torch.equal(a, b) for a, b in zip(got, want))
        elif theirs.get_seq_length():
            idx = torch.tensor([i % rows for i in arg])
            ours.batch_select_indices(idx)
            theirs.batch_select_indices(idx)
            rows = len(arg)
        assert ours.get_seq_length() == theirs.get_seq_length()
        if theirs.get_seq_length():
            assert torch.equal(ours.keys, theirs.keys) and torch.equal(ours.values, theirs.values)


def test_decode_steps_within_the_reserve_write_in_place():
    cache = ReservedCache(reserve=4)
    k = torch.zeros(2, 1, 10, 3)
    cache.update(k, k, 0)
    buffer = cache.layers[0]._keys
    for _ in range(4):
        cache.update(torch.ones(2, 1, 1, 3), torch.ones(2, 1, 1, 3), 0)
    assert cache.layers[0]._keys is buffer and cache.get_seq_length() == 14
    cache.update(torch.ones(2, 1, 1, 3), torch.ones(2, 1, 1, 3), 0)  # past the reserve: grows once
    assert cache.layers[0]._keys is not buffer and cache.layers[0]._keys.shape[-2] == 15 + 4
    assert cache.layers[0].keys[:, :, 10:].eq(1).all() and cache.layers[0].keys[:, :, :10].eq(0).all()


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 3), st.integers(1, 9), st.integers(1, 3), st.integers(1, 9), st.integers(0, 4), st.integers(0, 4))
def test_rows_joining_a_cache_keep_their_states_left_padded_with_zeros(rows_a, len_a, rows_b, len_b, reserve, more):
    gen = torch.Generator().manual_seed(1)
    a, b = ReservedLayer(2), ReservedLayer(0)
    ka, va, kb, vb = (torch.randn(r, 2, n, 3, generator=gen) for r, n in ((rows_a, len_a),) * 2 + ((rows_b, len_b),) * 2)
    a.update(ka, va)
    b.update(kb, vb)
    a.extend_rows(b, reserve)
    width = max(len_a, len_b)
    assert a.get_seq_length() == width and a.keys.shape[0] == rows_a + rows_b
    for got, mine, theirs in ((a.keys, ka, kb), (a.values, va, vb)):
        assert torch.equal(got[:rows_a, :, width - len_a:], mine) and torch.equal(got[rows_a:, :, width - len_b:], theirs)
        assert got[:rows_a, :, : width - len_a].eq(0).all() and got[rows_a:, :, : width - len_b].eq(0).all()
    # decode steps within the new reserve write in place, past it the layer grows
    buffer = a._keys
    for step in range(reserve + more):
        k = torch.full((rows_a + rows_b, 2, 1, 3), float(step))
        a.update(k, k)
        assert (a._keys is buffer) == (step < reserve)
    assert a.get_seq_length() == width + reserve + more
    assert torch.equal(a.keys[:rows_a, :, width - len_a: width], ka)
