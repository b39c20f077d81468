"""The ``native`` fuzz target: the native RunMetadata decoder against protobuf.

Each input is a mutated RunMetadata; :func:`tests.stepcols.check_decoders` then
requires that bytes upb rejects are declined by the native decoder and that
columns it returns equal the pure-Python walk of upb's parse. An input ends
``accepted`` when the native decoder returned (equal) columns, ``clean`` when it
declined, ``other`` on a disagreement (``NativeMismatch``), a crash or a hang.

Seeds (:func:`native_seeds`): the corpus's RunMetadata as TensorFlow wrote them;
the same with their allocators renamed to a GPU allocator (the GPU columns and
allocation records are read only for those) and the model's GraphDef, a cost
graph and session metadata appended (the top-level fields the decoder skips); and
the RunMetadata of the hand-made GPU cases and of :mod:`tests.native_cases`.
Inputs get the shared mutator's edits (:func:`tests.fuzz.mutate.mutate`: bit
flips, truncation, splicing, extreme values, varint and length corruption,
invalid UTF-8, duplicated, dropped and renumbered fields, ...) or edits aimed at
the decoder's rules: unknown fields inserted in any message, non-minimal keys
and length prefixes (which protobuf accepts), a message split into two
occurrences (merged when singular), a packed field cut inside its last varint,
every kind of invalid UTF-8 in a string field, a string set to contain ``GPU``.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from pathlib import Path
from typing import Optional

from tests.fuzz.cases import Case, Corpus
from tests.fuzz.mutate import mutate
from tests.fuzz.wire_tree import MessageIndex, apply_edits, encode_varint, index_message
from tests.native_cases import BAD_UTF8
from tfprof_lite.proto import messages as pb

__all__ = ["NATIVE_TARGET", "native_case", "native_seeds", "run_native", "warm"]

#: Name of the target (not in :data:`tests.fuzz.cases.TARGETS`: the campaign gives
#: it its own, larger, number of inputs, as it is thousands of times faster).
NATIVE_TARGET = "native"

_BAD_UTF8 = tuple(BAD_UTF8.values())
_GPU_NAMES = (b"GPU_0_bfc", b"gpu_host_bfc", b"xGPU", b"GP", b"GPU")
Edit = Callable[[random.Random, MessageIndex, int], bytes]


def _gpu_variant(data: bytes, graph: bytes) -> bytes:
    """``data`` with every allocator renamed to ``GPU_0_bfc`` and the skipped
    top-level fields appended (``graph`` as a partition graph)."""
    meta = pb.RunMetadata()
    meta.ParseFromString(data)
    for dev in meta.step_stats.dev_stats:
        for node in dev.node_stats:
            for used in node.memory:
                used.allocator_name = "GPU_0_bfc"
                used.allocator_bytes_in_use = used.total_bytes * 3
            for out in node.output:
                out.tensor_description.allocation_description.allocator_name = "GPU_0_bfc"
    meta.partition_graphs.add().ParseFromString(graph)
    meta.cost_graph.node.add(name="n", id=1, device="/device:CPU:0")
    meta.session_metadata.name = "fuzz"
    return meta.SerializeToString()


def _hand_made() -> list[bytes]:
    from tests.hand_cases import gpu_case, numbers_case, steps_case
    from tests.native_cases import MESSAGES, WIRE

    cases = (gpu_case(), steps_case(), numbers_case())
    out = [data for case in cases for _, data in case.run_metas]
    out.extend(make().SerializeToString() for make in MESSAGES.values())
    out.extend(WIRE.values())
    return out


@functools.lru_cache(maxsize=4)
def _seeds_of(directory: Path) -> tuple[tuple[bytes, Optional[MessageIndex]], ...]:
    corpus = Corpus(directory)
    seeds = [corpus.files[name] for name in corpus.names("run_meta")]
    for model in corpus.models:
        graph = corpus.files[corpus.names("graph", model)[0]]
        seeds.extend(_gpu_variant(corpus.files[n], graph) for n in corpus.names("run_meta", model))
    seeds.extend(_hand_made())
    return tuple((data, index_message(data, pb.RunMetadata.DESCRIPTOR)) for data in seeds)


def native_seeds(corpus: Corpus) -> list[bytes]:
    """The unmutated inputs of the target (see the module docstring)."""
    return [data for data, _ in _seeds_of(corpus.directory)]


def warm(corpus: Corpus) -> None:
    """Build the seeds and their field indexes (before forking workers)."""
    _seeds_of(corpus.directory)


# ---------------------------------------------------------------- decoder-aimed edits


def _insert_unknown(rng: random.Random, index: MessageIndex, pos: int) -> bytes:
    number = rng.choice((18, 19, 31, 99, 1000, 2**29 - 1))
    wire = rng.choice((0, 1, 2, 5))
    value = {0: b"\x01", 1: b"\x00" * 8, 2: b"\x02ab", 5: b"\x00" * 4}[wire]
    extra = encode_varint(number << 3 | wire) + value
    field = index.field_bytes(pos)
    return field + extra if rng.random() < 0.5 else extra + field


def _overlong_key(rng: random.Random, index: MessageIndex, pos: int) -> bytes:
    key = index.key_bytes(pos)
    pad = rng.choice((1, 1, 2, 4))  # a two-byte key is read; longer ones are declined
    padded = bytes(b | 0x80 for b in key) + b"\x80" * (pad - 1) + b"\x00"
    return padded + index.field_bytes(pos)[len(key) :]


def _overlong_length(rng: random.Random, index: MessageIndex, pos: int) -> bytes:
    body = index.value_bytes(pos)
    size = encode_varint(len(body))
    width = rng.choice((5, 5, 6))  # five bytes are read; six are declined
    padded = bytes(b | 0x80 for b in size) + b"\x80" * (width - len(size) - 1) + b"\x00"
    if len(size) >= width:
        padded = size
    return index.key_bytes(pos) + padded + body


def _bad_utf8(rng: random.Random, index: MessageIndex, pos: int) -> bytes:
    text = index.value_bytes(pos)
    cut = rng.randint(0, len(text))
    new = text[:cut] + rng.choice(_BAD_UTF8) + text[cut:]
    return index.key_bytes(pos) + encode_varint(len(new)) + new


def _gpu_name(rng: random.Random, index: MessageIndex, pos: int) -> bytes:
    new = rng.choice(_GPU_NAMES)
    return index.key_bytes(pos) + encode_varint(len(new)) + new


def _split_message(rng: random.Random, index: MessageIndex, pos: int) -> bytes:
    """A message field sent as two occurrences, each with part of its fields (one
    message merged from both when singular, two elements when repeated)."""
    children = [i for i, span in enumerate(index.fields) if span.parent == pos]
    if index.fields[pos].kind != "message" or len(children) < 2:
        return index.field_bytes(pos)
    cut = rng.randint(1, len(children) - 1)
    key = index.key_bytes(pos)
    groups = [children[:cut], children[cut:]]
    rng.shuffle(groups)  # either part first
    parts = [b"".join(index.field_bytes(i) for i in group) for group in groups]
    return b"".join(key + encode_varint(len(part)) + part for part in parts)


def _cut_packed(rng: random.Random, index: MessageIndex, pos: int) -> bytes:
    """A packed field whose last varint loses its last byte (length kept exact)."""
    body = index.value_bytes(pos)[: -rng.choice((1, 2))]
    return index.key_bytes(pos) + encode_varint(len(body)) + body


_EDITS: tuple[tuple[str, str, Edit], ...] = (
    ("split_message", "len", _split_message),
    ("split_message", "len", _split_message),
    ("cut_packed", "packed", _cut_packed),
    ("bad_utf8", "string", _bad_utf8),
    ("insert_unknown", "any", _insert_unknown),
    ("overlong_key", "any", _overlong_key),
    ("overlong_length", "len", _overlong_length),
    ("bad_utf8", "string", _bad_utf8),
    ("gpu_name", "string", _gpu_name),
)


def _groups(index: MessageIndex, category: str) -> list[list[int]]:
    if category != "packed":
        return index.groups(category)
    return [
        g
        for g in ([i for i in p if index.fields[i].kind == "packed"] for p in index.groups("len"))
        if g
    ]


def _aimed(rng: random.Random, index: MessageIndex) -> tuple[bytes, list[str]]:
    edits: dict[int, bytes] = {}
    notes = []
    for _ in range(rng.choice((1, 1, 2, 3))):
        what, category, edit = rng.choice(_EDITS)
        groups = _groups(index, category)
        if not groups:
            continue
        pos = rng.choice(rng.choice(groups))
        if pos not in edits:
            edits[pos] = edit(rng, index, pos)
            notes.append(f"{what}({index.fields[pos].name})")
    return apply_edits(index, edits), notes


def native_case(corpus: Corpus, index: int, seed: int) -> Case:
    """Case ``index`` of the native target for campaign seed ``seed`` (deterministic)."""
    rng = random.Random(f"{seed}/{NATIVE_TARGET}/{index}")
    seeds = _seeds_of(corpus.directory)
    pick = rng.randrange(len(seeds))
    data, field_index = seeds[pick]
    notes = [f"seed(native #{pick})"]
    if field_index is not None and field_index.fields and rng.random() < 0.4:
        data, edits = _aimed(rng, field_index)
        if rng.random() < 0.3:
            data, more = mutate(rng, data, None, corpus.donors)
            edits += more
    else:
        data, edits = mutate(rng, data, field_index, corpus.donors)
    return Case(NATIVE_TARGET, index, {"run_meta": data}, notes=notes + edits)


def run_native(case: Case) -> str:
    """The outcome status of one native case (``accepted`` or ``clean``); raises
    :class:`tests.stepcols.NativeMismatch` on a disagreement."""
    from tests.stepcols import check_decoders

    return "accepted" if check_decoders(case.files["run_meta"]) == "decoded" else "clean"
