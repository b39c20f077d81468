"""The trace's JSON text, as ``json.dumps(indent=4, separators=(",", ": "))`` writes it.

Op events and flows are written by ``%`` templates; other events by
:func:`pretty`, a small encoder for dicts of strings and ints that leaves
anything else to :func:`json.dumps`. The text is the same in every case: the
templates and :func:`pretty` only avoid the pure-Python indenting encoder.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from itertools import repeat
from json.encoder import encode_basestring_ascii
from operator import add
from typing import Any, Callable

__all__ = [
    "EMPTY_TRACE",
    "FLOW_EVENTS",
    "LINE2",
    "PLAIN_OP_EVENT",
    "encode_str",
    "is_plain",
    "op_event_template",
    "plain_inputs",
    "pretty",
]

#: A string as JSON (ASCII only, as ``json.dumps`` writes it by default).
encode_str: Callable[[str], str] = encode_basestring_ascii

LINE2 = "\n        "  # an event in {"traceEvents": [...]} written with indent=4
_LINE3 = LINE2 + "    "  # an event's fields
_LINE4 = _LINE3 + "    "  # the fields of its args
#: The text of a trace without events.
EMPTY_TRACE = '{\n    "traceEvents": []\n}'

#: Op event templates by number of inputs: ``%`` (op, pid, tid, ts, dur, node, op,
#: input0, ...), every string JSON-encoded.
_OP_EVENTS: dict[int, str] = {}
_CACHED_INPUTS = 64  # templates for more inputs are built per event

#: An op event whose strings need no escaping; ``%`` (op, pid, tid, ts, dur, node,
#: op, inputs) with the inputs already written (``,<newline>"input0": "a"...``).
PLAIN_OP_EVENT = (
    f'{{{_LINE3}"ph": "X",{_LINE3}"cat": "Op",{_LINE3}"name": "%s",{_LINE3}"pid": %s,'
    f'{_LINE3}"tid": %s,{_LINE3}"ts": %s,{_LINE3}"dur": %s,{_LINE3}"args": {{'
    f'{_LINE4}"name": "%s",{_LINE4}"op": "%s"%s{_LINE3}}}{LINE2}}}'
)
#: ``",<newline>"inputN": "``: with the names in between, the inputs of a plain op
#: event (less the first character, plus a closing quote).
_PLAIN_INPUT_KEYS: list[str] = []

#: A flow event; ``%`` (ph, name, pid, tid, ts, id).
_FLOW_EVENT = (
    f'{{{_LINE3}"ph": "%s",{_LINE3}"cat": "DataFlow",{_LINE3}"name": %s,{_LINE3}"pid": %s,'
    f'{_LINE3}"tid": %s,{_LINE3}"ts": %s,{_LINE3}"id": %s{LINE2}}}'
)
#: A flow's start and end events as one part of the event list; ``%`` (name, pid,
#: tid, ts, id, name, pid, tid, ts, id) with the name JSON-encoded.
FLOW_EVENTS = (
    _FLOW_EVENT.replace('"%s"', '"s"', 1) + "," + LINE2 + _FLOW_EVENT.replace('"%s"', '"t"', 1)
)


def pretty(value: Any, newline: str) -> str:
    """``value`` as ``json.dumps(indent=4, separators=(",", ": "))`` writes it at the
    nesting level whose lines start with ``newline``.

    Strings, ints and non-empty dicts with string keys are written here; anything
    else (floats, bools, lists, other key types) by :func:`json.dumps`, whose lines
    are shifted to this level (the same text: the encoder indents by level).
    """
    kind = type(value)
    if kind is str:
        return encode_str(value)
    if kind is int:
        return int.__repr__(value)
    if kind is dict and value:
        inner = newline + "    "
        items = []
        for key, item in value.items():
            if type(key) is not str:
                break
            kind = type(item)
            if kind is str:
                text = encode_str(item)
            elif kind is int:
                text = int.__repr__(item)
            else:
                text = pretty(item, inner)
            items.append(f"{inner}{encode_str(key)}: {text}")
        else:
            return "{" + ",".join(items) + newline + "}"
    return json.dumps(value, indent=4, separators=(",", ": ")).replace("\n", newline)


def op_event_template(inputs: int) -> str:
    """The template of an op event with ``inputs`` inputs: ``%`` (op, pid, tid, ts,
    dur, node, op, input0, ...), every string JSON-encoded."""
    template = _OP_EVENTS.get(inputs)
    if template is None:
        template = (
            f'{{{_LINE3}"ph": "X",{_LINE3}"cat": "Op",{_LINE3}"name": %s,{_LINE3}"pid": %s,'
            f'{_LINE3}"tid": %s,{_LINE3}"ts": %s,{_LINE3}"dur": %s,{_LINE3}"args": {{'
            f'{_LINE4}"name": %s,{_LINE4}"op": %s'
            + "".join([f',{_LINE4}"input{i}": %s' for i in range(inputs)])
            + f"{_LINE3}}}{LINE2}}}"
        )
        if inputs <= _CACHED_INPUTS:
            _OP_EVENTS[inputs] = template
    return template


def _plain_input_keys(count: int) -> list[str]:
    """At least ``count`` entries of ``_PLAIN_INPUT_KEYS``."""
    while len(_PLAIN_INPUT_KEYS) < count:
        _PLAIN_INPUT_KEYS.append(f'",{_LINE4}"input{len(_PLAIN_INPUT_KEYS)}": "')
    return _PLAIN_INPUT_KEYS


def plain_inputs(inputs: Sequence[str]) -> list[str]:
    """The ``args`` inputs of plain op events (``,<newline>"input0": "a"...``) from
    their labels' ``"a, b"`` texts (one or two inputs, the usual case, by
    ``str.replace``)."""
    keys = _plain_input_keys(max(map(str.count, inputs, repeat(", ")), default=0) + 1)
    first = keys[0][1:]
    second = keys[1] if len(keys) > 1 else ""
    out: list[str] = []
    append = out.append
    for text in inputs:
        separators = text.count(", ")
        if not text:
            append("")
        elif separators == 0:
            append(f'{first}{text}"')
        elif separators == 1:
            append(f'{first}{text.replace(", ", second)}"')
        else:
            append("".join(map(add, keys, text.split(", ")))[1:] + '"')
    return out


def is_plain(texts: Iterable[str]) -> bool:
    """Whether JSON writes every string of ``texts`` as it is, between quotes: only
    printable ASCII but ``"`` and ``\\`` (DEL, printable for JSON, is refused too)."""
    joined = "".join(texts)
    return joined.isascii() and joined.isprintable() and '"' not in joined and "\\" not in joined
