"""``schemas.to_frame`` builds nested columns from JSON (a fast path); on any rows it must give
what building them with ``pl.from_dicts`` gives, table or SchemaError alike."""
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from lmad import schemas
from lmad.schemas import TABLES, SchemaError, to_frame

NESTED = sorted(name for name, (schema, _) in TABLES.items() if any(d.is_nested() for d in schema.dtypes()))


def values(dtype: pl.DataType, depth: int = 0):
    """Values of ``dtype``, None anywhere, and now and then one of the wrong shape or type."""
    if isinstance(dtype, pl.List):
        good = st.lists(values(dtype.inner, depth + 1), max_size=3)
    elif isinstance(dtype, pl.Struct):
        good = st.fixed_dictionaries({f.name: values(f.dtype, depth + 1) for f in dtype.fields})
    elif dtype == pl.Int64:
        good = st.integers(-5, 5)
    elif dtype == pl.Float64:
        good = st.floats(allow_nan=True, allow_infinity=False, width=32)
    elif dtype == pl.Boolean:
        good = st.booleans()
    else:
        good = st.text(max_size=4)
    wrong = st.sampled_from(["x", 2.5, 7, True, ["y"], {"k": 1}])
    return st.one_of(good, good, good, st.none(), wrong)


@st.composite
def tables(draw):
    name = draw(st.sampled_from(NESTED))
    schema, _ = TABLES[name]
    rows = draw(st.lists(st.fixed_dictionaries({c: values(d) for c, d in schema.items()}), min_size=1, max_size=4))
    return name, rows


def reference(name, rows):
    """The table with flat columns built as a flat table's (strictly, from lists) and nested
    ones by ``pl.from_dicts`` (the code before the JSON path), or SchemaError."""
    schema, key = TABLES[name]
    nested = [c for c, d in schema.items() if d.is_nested()]
    flat = [c for c in schema.names() if c not in nested]
    columns = {c: [r.get(c) for r in rows] for c in schema.names()}
    try:
        frame = pl.concat([pl.DataFrame({c: columns[c] for c in flat}, schema={c: schema[c] for c in flat}, strict=True),
                           pl.from_dicts([{c: r.get(c) for c in nested} for r in rows],
                                         schema={c: schema[c] for c in nested}, strict=True)],
                          how="horizontal").select(schema.names())
        schemas._lost_values(name, columns, frame)
    except (TypeError, ValueError, AttributeError, pl.exceptions.PolarsError):  # SchemaError is a ValueError
        return SchemaError
    return frame.sort(key, nulls_last=True, maintain_order=True)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables())
def test_nested_columns_from_json_are_what_from_dicts_builds(table):
    name, rows = table
    want = reference(name, rows)
    if want is SchemaError:
        with pytest.raises(SchemaError):
            to_frame(name, rows)
    else:
        assert to_frame(name, rows).equals(want, null_equal=True)


def test_a_lone_string_where_a_list_belongs_is_refused():
    # JSON decoding would read "abc" as ["abc"]; from_dicts (and so to_frame) refuses it
    schema, _ = TABLES["lmad_trace"]
    row = {c: None for c in schema.names()} | {"qid": "q", "method": "lmad", "iteration": 0, "answers": "abc"}
    with pytest.raises(SchemaError, match="answers"):
        to_frame("lmad_trace", [row])


def test_a_float_in_a_flat_string_column_is_refused_beside_a_nested_column_from_dicts_builds():
    # [2.5] in a list-of-strings column takes from_dicts; that must not loosen the flat columns
    row = {"qid": "", "active": False, "committed": [2.5], "stop_reason": "", "stop_iteration": 0,
           "prediction": None, "prediction_norm": 2.5}
    with pytest.raises(SchemaError, match="prediction_norm"):
        to_frame("lmad_state", [row])
    assert to_frame("lmad_state", [row | {"prediction_norm": "x"}])["committed"].to_list() == [["2.5"]]
