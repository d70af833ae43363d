"""Which rows of a batch share a prefix (``backends.shared_prefix``): a plan the backend can trust."""
from hypothesis import given, strategies as st

from lmad.backends.shared_prefix import grouped_order, prefill_cost, prefill_plan, prefix_groups

# a few long stems (passages) with short tails, so that sharing is common; tokens from a small vocabulary
stems = st.lists(st.integers(0, 3), min_size=0, max_size=12)
tails = st.lists(st.integers(0, 3), min_size=0, max_size=4)


@st.composite
def batches(draw):
    pool = draw(st.lists(stems, min_size=1, max_size=3))
    rows = draw(st.lists(st.tuples(st.sampled_from(pool), tails), min_size=1, max_size=12))
    return [stem + tail + [9] for stem, tail in rows]  # every prompt has at least one token


@given(batches(), st.integers(1, 6))
def test_groups_partition_the_rows_and_their_prefixes_are_shared(ids, min_shared):
    groups = prefix_groups(ids, min_shared)
    assert sorted(r for rows, _ in groups for r in rows) == list(range(len(ids)))
    for rows, length in groups:
        if len(rows) == 1:
            assert length == 0
            continue
        assert length >= min_shared
        assert all(ids[r][:length] == ids[rows[0]][:length] for r in rows)
        assert all(length <= len(ids[r]) - 1 for r in rows)  # each row keeps a token of its own
    assert sorted(grouped_order(ids, min_shared)) == list(range(len(ids)))
    plan, plain, planned = prefill_plan(ids, min_shared)
    assert plain == len(ids) * max(map(len, ids)) and 0 < planned <= plain
    if plan is None:
        assert planned == plain
    else:  # the groups again, lone rows perhaps with all but their last token as their "prefix"
        assert planned == prefill_cost(ids, plan) < plain
        assert sorted(r for rows, _ in plan for r in rows) == list(range(len(ids)))
        assert all(0 <= length <= len(ids[r]) - 1 and ids[r][:length] == ids[rows[0]][:length]
                   for rows, length in plan for r in rows)


def test_copies_of_one_prompt_are_one_group_and_prefill_about_once():
    prompt = list(range(200))
    ids = [prompt, [7] * 150, prompt, prompt]
    groups = prefix_groups(ids)
    assert ([0, 2, 3], 199) in groups and ([1], 0) in groups
    assert prefill_cost(ids, groups) == 199 + 4 * 150
    # the lone row whole in the first pass leaves one token a row for the second
    assert prefill_plan(ids) == ([([0, 2, 3], 199), ([1], 149)], 4 * 200, 2 * 199 + 4 * 1)


def test_the_longest_shared_prefix_wins_over_a_short_one_every_row_has():
    system = [1] * 70  # a system prompt every row shares
    a, b = system + [2] * 300, system + [3] * 300
    ids = [a + [4], b + [5], a + [6], b + [7]]
    groups = prefix_groups(ids)
    assert sorted((sorted(rows), length) for rows, length in groups) == [([0, 2], 370), ([1, 3], 370)]
    order = grouped_order(ids)
    assert {frozenset(order[:2]), frozenset(order[2:])} == {frozenset({0, 2}), frozenset({1, 3})}


def test_no_row_shares_enough_and_a_single_row():
    assert prefix_groups([[1, 2], [3, 4]]) == [([0], 0), ([1], 0)]
    assert prefix_groups([[5] * 500]) == [([0], 0)]
    assert prefix_groups([]) == []


def test_rows_of_one_prompt_each_take_one_padded_pass():
    ids = [[k] * (100 + k) for k in range(5)]  # nothing shared: a localizer's or resolver's batch
    assert prefill_plan(ids) == (None, 5 * 104, 5 * 104)
