"""``dtype: auto`` of the embedded backend: bfloat16 exactly where the CPU advertises bf16 matrix
instructions (x86 AMX or AVX-512 BF16), float32 on every other CPU and when nothing can be read."""
from hypothesis import given
from hypothesis import strategies as st

from lmad.backends.cpu_dtype import BF16_FLAGS, fast_dtype, resolve_dtype

SAPPHIRE = "processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512_bf16 amx_bf16 amx_tile\n"
SKYLAKE = "processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512_vnni\n"
GRAVITON = "processor\t: 0\nFeatures\t: fp asimd bf16 i8mm\n"


def test_the_cpus_seen():
    assert fast_dtype(SAPPHIRE, "x86_64") == "bfloat16"
    assert fast_dtype(SKYLAKE, "x86_64") == "float32"
    assert fast_dtype(GRAVITON, "aarch64") == "float32"  # not measured there: the safe choice
    assert fast_dtype(None, "x86_64") == "float32"
    assert fast_dtype("", "x86_64") == "float32"


OTHER = st.sampled_from(["fpu", "sse2", "avx2", "avx512f", "avx512_vnni", "amx_int8", "amx_tile", "bf16"])


@given(flags=st.lists(st.one_of(OTHER, st.sampled_from(sorted(BF16_FLAGS))), max_size=8),
       machine=st.sampled_from(["x86_64", "AMD64", "aarch64", "arm64"]))
def test_bfloat16_exactly_where_an_x86_cpu_has_a_bf16_flag(flags, machine):
    got = fast_dtype(f"processor : 0\nflags : {' '.join(flags)}\n", machine)
    x86 = machine.lower() in ("x86_64", "amd64")
    assert got == ("bfloat16" if x86 and set(flags) & BF16_FLAGS else "float32")


def test_a_named_dtype_is_kept_and_auto_is_never_what_loads():
    assert resolve_dtype("float32") == "float32"
    assert resolve_dtype("bfloat16") == "bfloat16"
    assert resolve_dtype("auto") in ("float32", "bfloat16") and resolve_dtype(None) == resolve_dtype("auto")
