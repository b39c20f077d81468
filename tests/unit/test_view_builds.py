"""The per-graph builds behind the scope and graph views and their messages.

Each fast build is checked against a direct, node-by-node reference on random
inputs: the scope tree (one sort with ``/`` as the lowest character) against
walking the prefixes, the graph view's input walk against walking each node's
input dict, the encoded node fields against messages set field by field with
protobuf, and the encoder's grouping of equal rows against encoding every row.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.outputs.message import _GRAPH_TOTAL, _parse_tree
from tfprof_lite.outputs.message_nodes import (
    TotalsCache,
    _encode_rows,
    build_heads_pure,
    encode_fields,
    encode_sized,
    encode_sized_pure,
    framings,
    node_heads,
)
from tfprof_lite.proto import messages as pb
from tfprof_lite.proto.wire import varint
from tfprof_lite.views.graph import graph_structure
from tfprof_lite.views.inputs import build_pure, input_table
from tfprof_lite.views.passes import Structure, make_structure
from tfprof_lite.views.scope import scope_structure, scope_structure_pure


# ---------------------------------------------------------------- references
def _reference_scope(names: list[str]) -> Structure:
    ids = {name: nid for nid, name in enumerate(names)}
    for name in names:
        cut = name.rfind("/")
        while cut >= 0 and name[:cut] not in ids:
            ids[name[:cut]] = -1
            cut = name[:cut].rfind("/")
    top: list[str] = []
    kids: dict[str, list[str]] = {}
    for name in sorted(ids):
        cut = name.rfind("/")
        (top if cut < 0 else kids.setdefault(name[:cut], [])).append(name)
    order: list[str] = []
    parents: list[int] = []
    stack = [(name, -1) for name in reversed(top)]
    while stack:
        name, parent = stack.pop()
        order.append(name)
        parents.append(parent)
        stack.extend((kid, len(order) - 1) for kid in reversed(kids.get(name, [])))
    return make_structure([ids[name] for name in order], parents, order)


def _reference_graph(
    model: ProfileModel, extent: int
) -> tuple[list[int], list[int], list[list[int]]]:
    names = model.names
    consumed = set()
    kids: list[list[int]] = []
    for nid in range(extent):
        inputs = model.inputs[nid]
        row = []
        for pos in sorted(inputs):
            consumed.add(inputs[pos])
            producer = model.index.get(inputs[pos])
            if producer is not None and producer < extent:
                row.append(producer)
        kids.append(row)
    roots = [
        nid for nid in sorted(range(extent), key=names.__getitem__) if names[nid] not in consumed
    ]
    seen: set[int] = set()
    nids: list[int] = []
    parents: list[int] = []
    stack = [(nid, -1) for nid in reversed(roots)]
    while stack:
        nid, parent = stack.pop()
        if nid in seen:
            continue
        seen.add(nid)
        nids.append(nid)
        parents.append(parent)
        stack.extend((kid, len(nids) - 1) for kid in reversed(kids[nid]) if kid not in seen)
    position = {nid: i for i, nid in enumerate(nids)}
    return nids, parents, [[position[k] for k in kids[nid]] for nid in nids]


def _same_structure(got: Structure, want: Structure) -> bool:
    return (
        got.names == want.names
        and got.parent == want.parent
        and np.array_equal(got.nid, want.nid)
        and np.array_equal(got.end, want.end)
        and np.array_equal(got.rank, want.rank)
    )


# ---------------------------------------------------------------- scope tree
_ALPHABETS = ["ab/-._A0", "ab/-._A0\0é ", "a/", "a/ü\n😀-"]


@pytest.mark.parametrize("build", [scope_structure, scope_structure_pure])
@pytest.mark.parametrize("seed", range(6))
def test_scope_tree_matches_prefix_walk(seed: int, build: Any) -> None:
    """The scope tree (the native builder when it is built, and the Python one)
    equals walking the prefixes, on names with NULs, newlines, leading,
    trailing and repeated ``/`` and multi-byte characters."""
    rng = random.Random(seed)
    for trial in range(400):
        alphabet = _ALPHABETS[trial % len(_ALPHABETS)]
        count = rng.randint(0, 14)
        names = list(
            {"".join(rng.choice(alphabet) for _ in range(rng.randint(0, 7))) for _ in range(count)}
        )
        if trial % 4 == 0:  # no trailing "/": the NumPy sort path
            names = list({name.rstrip("/") for name in names})
        want = _reference_scope(names)
        assert _same_structure(build(names), want), names
        index = {name: nid for nid, name in enumerate(names)}
        assert _same_structure(build(names, index), want), names


def _native(name: str) -> Any:
    """Extension ``name`` of ``tfprof_lite._native``; the test skips without it."""
    from tfprof_lite._native import load

    module = load(name)
    if module is None:
        pytest.skip(f"tfprof_lite._native.{name} is not built")
    return module


def test_native_scope_tree_columns() -> None:
    """The native builder's own columns on a small hand-checked tree."""
    module = _native("_scopetree")
    order, nid, parent, end = module.scope_tree(["b/c", "a", "b/c/d", "/x", "a-b"])
    assert order == ["", "/x", "a", "a-b", "b", "b/c", "b/c/d"]
    assert np.frombuffer(nid, dtype=np.int64).tolist() == [-1, 3, 1, 4, -1, 0, 2]
    assert np.frombuffer(parent, dtype=np.int64).tolist() == [-1, 0, -1, -1, -1, 4, 5]
    assert np.frombuffer(end, dtype=np.int64).tolist() == [2, 2, 3, 4, 7, 7, 7]
    empty = module.scope_tree([])
    assert empty == ([], b"", b"", b"")


def test_native_scope_tree_declines_what_python_handles() -> None:
    """A NUL in a name, a lone surrogate, a repeated name or a non-list
    declines (None); :func:`scope_structure` then builds the tree in Python."""
    module = _native("_scopetree")
    for names in (["a\0/b"], ["a/\ud800"], ["a/b", "a/b"], [1]):
        assert module.scope_tree(names) is None, names
        want = scope_structure_pure(names) if names != [1] else None
        if want is not None:
            assert _same_structure(scope_structure(names), want)
    assert module.scope_tree(("a",)) is None
    big = [f"s{i % 97}/n{i}" for i in range(20000)]
    assert _same_structure(scope_structure(big), scope_structure_pure(big))


# ---------------------------------------------------------------- graph walk
def _random_model(rng: random.Random, n: int) -> ProfileModel:
    model = ProfileModel()
    names = [f"{rng.choice('abc')}{i}" + "é" * (i % 3 == 0) for i in range(n)]
    model.extend_nodes(names, ["Op"] * n)
    for nid in range(n):
        k = rng.randint(0, 4)
        positions = rng.sample(range(6), k)  # any order, gaps allowed
        srcs = [rng.choice([*names, "missing"]) for _ in range(k)]
        model.inputs[nid] = dict(zip(positions, srcs))
        model.src_output[nid] = {src: rng.choice([0, 0, 0, 1]) for src in srcs}
        model.output_shapes[nid] = {
            slot: [rng.randint(-1, 300) for _ in range(rng.randint(0, 3))]
            for slot in rng.sample(range(3), rng.randint(0, 2))
        }
        model.canonical_device[nid] = rng.choice(["", "/job:w/device:CPU:0", "/device:GPU:1"])
    model.graph_version += 1
    return model


@pytest.mark.parametrize("seed", range(5))
def test_graph_walk_matches_input_dicts(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(40):
        model = _random_model(rng, rng.randint(0, 30))
        extent = rng.randint(0, len(model))
        struct = graph_structure(model, extent)
        nids, parents, edges = _reference_graph(model, extent)
        assert struct.nid.tolist() == nids
        assert struct.parent == parents
        assert struct.names == [model.names[nid] for nid in nids]
        assert struct.kid_edges() == edges


# ---------------------------------------------------------------- node fields
def _reference_head(model: ProfileModel, nid: int) -> bytes:
    msg = pb.GraphNodeProto(name=model.names[nid])
    if model.canonical_device[nid]:
        msg.devices.append(model.canonical_device[nid])
    for pos in sorted(model.inputs[nid]):
        src = model.inputs[nid][pos]
        producer = model.index.get(src)
        dims = []
        if producer is not None:
            dims = model.output_shapes[producer].get(model.src_output[nid].get(src, 0), [])
        shape = msg.input_shapes[pos]
        if dims:
            for d in dims:
                shape.dim.add(size=d)
        else:
            shape.unknown_rank = True
    data: bytes = msg.SerializeToString(deterministic=True)
    return data


@pytest.mark.parametrize("seed", range(4))
def test_node_heads_match_protobuf(seed: int) -> None:
    rng = random.Random(seed)
    model = _random_model(rng, 60)
    model.extend_nodes(["x" * 200, "ü/" * 70], ["Op", "Op"])  # two-byte lengths, UTF-8
    heads = node_heads(model)
    for nid, head in enumerate(heads):
        got = pb.GraphNodeProto.FromString(head).SerializeToString(deterministic=True)
        assert got == _reference_head(model, nid), model.names[nid]


def test_node_heads_follow_device_binding() -> None:
    model = ProfileModel()
    model.extend_nodes(["a", "b"], ["Op", "Op"])
    before = node_heads(model)
    model.canonical_device[1] = "/device:CPU:0"  # what a step does on first sight
    after = node_heads(model)
    assert before[1] != after[1]
    assert list(pb.GraphNodeProto.FromString(after[1]).devices) == ["/device:CPU:0"]


# ---------------------------------------------------------------- stat fields
def test_equal_rows_encode_like_every_row() -> None:
    rng = np.random.default_rng(0)
    cols = len(_GRAPH_TOTAL)
    for _ in range(30):
        base = rng.integers(-3, 1 << 40, (int(rng.integers(1, 8)), cols), dtype=np.int64)
        base[rng.random(base.shape) < 0.4] = 0
        values = base[rng.integers(0, len(base), int(rng.integers(0, 400)))]
        each, lengths = _encode_rows(values, _GRAPH_TOTAL)
        assert encode_fields(values, _GRAPH_TOTAL) == each
        assert lengths.tolist() == [len(data) for data in each]
        assert encode_sized(values, _GRAPH_TOTAL)[1].tolist() == lengths.tolist()
    mixed = rng.integers(0, 1 << 62, (300, cols), dtype=np.int64)  # mostly distinct
    assert encode_fields(mixed, _GRAPH_TOTAL) == _encode_rows(mixed, _GRAPH_TOTAL)[0]


def test_totals_cache_reencodes_changed_rows() -> None:
    rng = np.random.default_rng(1)
    cache = TotalsCache(_GRAPH_TOTAL)
    values = rng.integers(0, 5000, (200, len(_GRAPH_TOTAL)), dtype=np.int64)
    for _ in range(5):
        encoded = cache.encode(values)
        assert encoded == encode_fields(values, _GRAPH_TOTAL)
        assert cache.lengths.tolist() == [len(data) for data in encoded]
        values = values.copy()
        values[rng.integers(0, 200, 7), rng.integers(0, len(_GRAPH_TOTAL), 7)] += 1
    assert cache.encode(values[:50]) == encode_fields(values[:50], _GRAPH_TOTAL)


def test_framings_are_tag_and_length() -> None:
    lengths = np.array([0, 1, 127, 128, 300, 16383, 16384, 1 << 30], dtype=np.int64)
    for tag in (b"\x62", b"\x82\x01"):
        assert framings(tag, lengths) == [tag + varint(int(n)) for n in lengths]


# ---------------------------------------------------------------- native encoder
def _heads_args(model: ProfileModel) -> tuple[Any, ...]:
    table = input_table(model)
    return (
        model.names,
        model.canonical_device,
        table.offsets.astype(np.int64).tobytes(),
        table.pos.astype(np.int64).tobytes(),
        table.producer.astype(np.int64).tobytes(),
        table.srcs,
        model.src_output,
        model.output_shapes,
    )


@pytest.mark.parametrize("seed", range(4))
def test_native_input_edges_equal_python_table(seed: int) -> None:
    module = _native("_profileencode")
    rng = random.Random(seed)
    for _ in range(20):
        model = _random_model(rng, rng.randint(0, 80))
        model.inputs.append({7: "a0", -3: "zz", 1 << 40: ""})
        model.extend_nodes(["a0"], ["Op"])  # a name listed twice: the index keeps the last
        model.inputs[-1] = {}
        got = module.input_edges(model.inputs, model.index)
        assert got is not None
        want = build_pure(model)
        counts = np.frombuffer(got[0], dtype=np.int64)
        assert np.diff(want.offsets).tolist() == counts.tolist()
        assert np.frombuffer(got[1], dtype=np.int64).tolist() == want.pos.tolist()
        assert np.frombuffer(got[2], dtype=np.int64).tolist() == want.producer.tolist()
        assert got[3] == want.srcs
    assert module.input_edges([{"0": "a"}], {}) is None  # a position that is not an int
    assert module.input_edges([{0: 5}], {}) is None  # a producer that is not a name
    assert module.input_edges([[0]], {}) is None


@pytest.mark.parametrize("seed", range(4))
def test_native_heads_equal_python_heads(seed: int) -> None:
    module = _native("_profileencode")
    rng = random.Random(seed)
    for _ in range(10):
        model = _random_model(rng, rng.randint(0, 80))
        model.extend_nodes(["", "x" * 200, "ü/" * 70], ["Op"] * 3)
        model.inputs[-1] = {-2: "", 1 << 40: model.names[0] if len(model) > 3 else ""}
        assert module.heads(*_heads_args(model)) == build_heads_pure(model)


def test_native_heads_decline_unusual_arguments() -> None:
    """The native heads decline (None) where an argument is not what the model
    keeps; the Python path then runs and raises where it should."""
    module = _native("_profileencode")
    model = ProfileModel()
    model.extend_nodes(["a", "b"], ["Op", "Op"])
    model.inputs[1] = {0: "a"}
    model.output_shapes[0] = {0: [1 << 64]}  # beyond int64
    assert module.heads(*_heads_args(model)) is None
    model.output_shapes[0] = {0: (2, 3)}  # type: ignore[dict-item]  # not a list
    assert module.heads(*_heads_args(model)) is None
    model.output_shapes[0] = {0: [2, 3]}
    assert module.heads(*_heads_args(model)) == build_heads_pure(model)
    args = list(_heads_args(model))
    assert module.heads(*[*args[:2], args[2][:-8], *args[3:]]) is None  # offsets short
    assert module.heads(*[*args[:2], args[2][::-1], *args[3:]]) is None  # offsets garbled
    assert module.heads(*[*args[:4], np.array([9]).tobytes(), *args[5:]]) is None  # no node 9
    assert module.heads(*[*args[:5], [], *args[6:]]) is None  # edges and names differ
    model.names[0] = "\ud800"  # not encodable as UTF-8
    model.graph_version += 1
    assert module.heads(*_heads_args(model)) is None
    with pytest.raises(UnicodeEncodeError):
        build_heads_pure(model)


def _random_tree(rng: random.Random, n: int) -> tuple[list[list[bytes]], np.ndarray, list[int]]:
    """``n`` rows in pre-order: a parent for each row, two field streams, and levels."""
    parents, levels = [-1], [0]
    for r in range(1, n):
        candidates = [p for p in range(r) if levels[p] < 70]
        p = rng.choice(candidates[-5:]) if rng.random() < 0.7 else rng.choice(candidates)
        # pre-order: the parent must be the last row at its level or an ancestor of it
        while any(levels[q] <= levels[p] for q in range(p + 1, r)):
            p = parents[p]
            if p < 0:
                p = 0
                break
        parents.append(p)
        levels.append(levels[p] + 1)
    streams = [
        [
            pb.GraphNodeProto(name=f"n{r}" * rng.randint(0, 40)).SerializeToString()
            for r in range(n)
        ],
        [varint(8 << 3 | 0) + varint(rng.randint(0, 1 << 40)) for _ in range(n)],
    ]
    return streams, np.asarray(parents, dtype=np.int64), levels


@pytest.mark.parametrize("seed", range(3))
def test_native_tree_framing_equals_python(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    module = _native("_profileencode")
    rng = random.Random(seed)
    for _ in range(25):
        n = rng.randint(1, 300)
        streams, parent, levels = _random_tree(rng, n)
        level = np.asarray(levels, dtype=np.int64)
        own_len = np.asarray([sum(len(s[r]) for s in streams) for r in range(n)], dtype=np.int64)
        sizes = np.ones(n, dtype=np.int64)
        for r in range(n - 1, 0, -1):
            sizes[parent[r]] += sizes[r]
        native = module.frame_tree(streams, parent.tobytes(), b"\x62")
        assert native is not None
        monkeypatch.setenv("TFPROF_LITE_PURE_PYTHON", "1")
        pure = _parse_tree(pb.GraphNodeProto, (streams, own_len), level, sizes, parent, b"\x62")
        monkeypatch.delenv("TFPROF_LITE_PURE_PYTHON")
        assert pb.GraphNodeProto.FromString(native) == pure
        if int(level.max()) < 64:
            assert native == pure.SerializeToString()


def test_native_tree_framing_declines_bad_shapes() -> None:
    module = _native("_profileencode")
    one = [[b"\x0a\x01a", b"\x0a\x01b"]]
    assert (
        module.frame_tree(one, np.array([-1, 0]).tobytes(), b"\x62")
        == b"\x0a\x01a\x62\x03\x0a\x01b"
    )
    assert module.frame_tree(one, np.array([-1, 1]).tobytes(), b"\x62") is None  # own parent
    assert module.frame_tree(one, np.array([0, 0]).tobytes(), b"\x62") is None  # rooted twice
    assert module.frame_tree(one, np.array([-1]).tobytes(), b"\x62") is None  # lengths differ
    assert module.frame_tree([[b"x", None]], np.array([-1, 0]).tobytes(), b"\x62") is None
    assert module.frame_tree(one, b"\x00" * 15, b"\x62") is None
    assert module.frame_tree(one, np.array([-1, 0]).tobytes(), b"") is None
    assert module.frame_tree([], b"", b"\x62") is None


def test_native_stat_rows_equal_numpy_rows() -> None:
    module = _native("_profileencode")
    rng = np.random.default_rng(3)
    for fields in (_GRAPH_TOTAL, (1, 2, 16, 2047)):  # one- and two-byte keys
        for rows in (0, 1, 5, 300):
            values = rng.integers(-(1 << 62), 1 << 62, (rows, len(fields)), dtype=np.int64)
            values[rng.random(values.shape) < 0.5] = 0
            values[rng.random(values.shape) < 0.1] = rng.integers(0, 300)
            got, lengths = encode_sized(values, fields)
            assert (got, lengths.tolist()) == (
                encode_sized_pure(values, fields)[0],
                encode_sized_pure(values, fields)[1].tolist(),
            )
            tags = [varint(number << 3) for number in fields]
            assert module.encode_rows(values.tobytes(), tags) == got
            heads = [bytes(rng.integers(0, 256, rng.integers(0, 40), dtype=np.uint8)) for _ in got]
            joined = [head + row for head, row in zip(heads, got)]
            assert module.encode_rows(values.tobytes(), tags, heads) == joined
            with_heads, sizes = encode_sized(values, fields, heads)
            assert with_heads == joined and sizes.tolist() == list(map(len, joined))


@pytest.mark.parametrize("pure", [False, True])
def test_stat_rows_after_prefixes(pure: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows with prefixes are each prefix followed by the row, on both paths; a
    prefix list of another length is refused on the Python path (the native
    encoder declines it, and the Python path then raises)."""
    if pure:
        monkeypatch.setenv("TFPROF_LITE_PURE_PYTHON", "1")
    values = np.array([[0, 3], [1, 0], [0, 0]], dtype=np.int64)
    got, sizes = encode_sized(values, (1, 2), [b"a", b"", b"bc"])
    assert got == [b"a\x10\x03", b"\x08\x01", b"bc"] and sizes.tolist() == [3, 2, 2]
    with pytest.raises(ValueError, match="2 prefixes for 3 rows"):
        encode_sized(values, (1, 2), [b"a", b""])


def test_native_stat_rows_decline_bad_shapes() -> None:
    module = _native("_profileencode")
    assert module.encode_rows(b"\x01" + b"\x00" * 15, [b"\x08"]) == [b"\x08\x01", b""]
    assert module.encode_rows(b"\x00" * 12, [b"\x08"]) is None  # not whole rows
    assert module.encode_rows(b"\x00" * 16, [b"\x08", b""]) is None  # an empty key
    assert module.encode_rows(b"\x00" * 16, []) is None
    assert module.encode_rows(b"\x00" * 8, ["x"]) is None
    assert module.encode_rows(b"\x00" * 16, [b"\x08"], [b"a"]) is None  # one prefix, two rows
    assert module.encode_rows(b"\x00" * 8, [b"\x08"], ["a"]) is None  # a prefix not bytes
    assert module.encode_rows(b"\x00" * 8, [b"\x08"], (b"a",)) is None  # not a list
