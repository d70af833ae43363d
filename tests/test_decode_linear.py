"""decode_linear is torch's linear up to fp32 rounding for any input shape, takes ``W @ xᵀ`` only
for a decode step's few rows, and is what every linear layer of a routed model calls."""
import torch
from hypothesis import given, settings, strategies as st

from lmad.backends.decode_linear import MAX_ROWS, decode_linear, use_decode_linear

shapes = st.tuples(st.lists(st.integers(0, 5), min_size=0, max_size=2),  # leading dims (rows = their product)
                   st.integers(1, 40), st.integers(1, 40), st.booleans())


@settings(max_examples=80, deadline=None)
@given(shapes, st.integers(0, 2**31 - 1))
def test_decode_linear_is_linear_up_to_rounding(shape, seed):
    lead, k, n, with_bias = shape
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(*lead, k, generator=gen)
    w = torch.randn(n, k, generator=gen)
    b = torch.randn(n, generator=gen) if with_bias else None
    got, want = decode_linear(x, w, b), torch.nn.functional.linear(x, w, b)
    assert got.shape == want.shape and got.is_contiguous()
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-5)


def test_more_rows_than_a_decode_step_take_torchs_linear_itself():
    gen = torch.Generator().manual_seed(1)
    w = torch.randn(64, 32, generator=gen)
    x = torch.randn(2, MAX_ROWS, 32, generator=gen)  # 2 x MAX_ROWS rows: a prefill's shape
    assert torch.equal(decode_linear(x, w), torch.nn.functional.linear(x, w))


def test_every_linear_layer_of_a_routed_model_calls_decode_linear(monkeypatch):
    import lmad.backends.decode_linear as module

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4, bias=False))
    x = torch.randn(3, 8)
    want = model(x)
    assert use_decode_linear(model) == 2
    calls = []

    def recorded(t, w, b):
        calls.append((tuple(t.shape), b is None))
        return decode_linear(t, w, b)

    monkeypatch.setattr(module, "decode_linear", recorded)
    assert torch.allclose(model(x), want, rtol=1e-5, atol=1e-6)
    assert calls == [((3, 8), False), ((3, 16), True)]
