"""Which of tfprof's input messages some bytes hold: the wrong-message-kind check.

Protobuf parses almost any bytes as almost any message, so a GraphDef passed as
an op log, or a RunMetadata loaded as a saved profile, would be accepted and
silently give an empty or absurd profile. This module tells the five input kinds
apart — ``GraphDef``, ``RunMetadata``, ``OpLogProto``, ``ProfileProto`` and the
profiler's ``XSpace`` — for
:func:`tfprof_lite.proto.codec.parse` (the API) and the command line alike:

* :func:`plausible`: the message holds the data its kind is made of (nodes with
  names and ops, devices with step stats, named log entries, named profile nodes);
* :func:`mismatched`: a field of the message's schema arrived with another wire
  type (protobuf keeps it as an unknown field): the bytes were written as another
  message. Only a bounded sample of sub-messages is visited, so the check stays
  cheap on large inputs;
* :func:`identify`: the kind some bytes plausibly are, without mismatches;
* :func:`wrong_kind_error`: the one-line error naming what was given, what was
  expected and what it looks like instead, with where to pass it (``places``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from google.protobuf import text_format, unknown_fields

from tfprof_lite.errors import InvalidInputError
from tfprof_lite.proto import messages as pb

__all__ = [
    "API_PLACES",
    "KINDS",
    "article",
    "identify",
    "looks_like_xspace",
    "mismatched",
    "plausible",
    "wrong_kind_error",
]

#: The input kinds, in the order :func:`identify` tries them.
KINDS: tuple[str, ...] = ("ProfileProto", "GraphDef", "RunMetadata", "OpLogProto", "XSpace")

#: Where each kind goes in the Python API.
API_PLACES: Mapping[str, str] = {
    "ProfileProto": "load it with Profiler.load()",
    "GraphDef": "pass it as graph=",
    "RunMetadata": "pass it to Profiler.add_step() or as run_meta=",
    "OpLogProto": "pass it as op_log=",
    "XSpace": "load it with Profiler.load()",
}

_SAMPLE = 50  # entries looked at by the plausibility checks
_BUDGET = 64  # sub-messages visited by the wire-type check


def _named_nodes(m: Any) -> bool:
    nodes = list(m.nodes.values())[:_SAMPLE] if len(m.nodes) else []
    return bool(nodes) and all(n.name for n in nodes)


def _graph(m: Any) -> bool:
    return len(m.node) > 0 and all(n.name and n.op for n in m.node[:_SAMPLE])


def _run_meta(m: Any) -> bool:
    devs = m.step_stats.dev_stats
    return len(devs) > 0 and all(d.device for d in devs[:_SAMPLE])


def _op_log(m: Any) -> bool:
    return len(m.log_entries) > 0 and all(e.name for e in m.log_entries[:_SAMPLE])


def _xspace(m: Any) -> bool:
    return any(
        p.name.startswith(_XSPACE_PLANES) or p.name == "Task Environment"
        for p in m.planes[:_SAMPLE]
    )


_XSPACE_PLANES = ("/host:", "/device:", "/virtualdevice:")

_PLAUSIBLE: Mapping[str, Callable[[Any], bool]] = {
    "ProfileProto": _named_nodes,
    "GraphDef": _graph,
    "RunMetadata": _run_meta,
    "OpLogProto": _op_log,
    "XSpace": _xspace,
}


def article(name: str) -> str:
    """``name`` with its indefinite article (``an OpLogProto``, ``a GraphDef``)."""
    return f"an {name}" if name[0] in "AEIOUX" else f"a {name}"


def plausible(kind: str, message: Any) -> bool:
    """Whether ``message`` (of kind ``kind``) holds the data that kind is made of."""
    return _PLAUSIBLE[kind](message)


def _repeated(fd: Any) -> bool:
    """Whether field ``fd`` is repeated (``is_repeated`` on newer protobuf)."""
    flag = getattr(fd, "is_repeated", None)
    if flag is not None:
        return bool(flag)
    return bool(fd.label == fd.LABEL_REPEATED)


def _sub_messages(message: Any) -> list[Any]:
    """The set message fields of ``message`` (at most ``_BUDGET`` of each repeated one)."""
    out: list[Any] = []
    for fd, value in message.ListFields():
        sub = fd.message_type
        if sub is None:
            continue
        if sub.GetOptions().map_entry:
            if sub.fields_by_name["value"].message_type is not None:
                out.extend(list(value.values())[:_BUDGET])
        elif _repeated(fd):
            out.extend(value[:_BUDGET])
        else:
            out.append(value)
    return out


def mismatched(message: Any) -> bool:
    """Whether a field of the schema arrived with another wire type, in ``message``
    or one of the first sub-messages (breadth first)."""
    queue = [message]
    for _ in range(_BUDGET):
        if not queue:
            return False
        current = queue.pop(0)
        known = current.DESCRIPTOR.fields_by_number
        if any(f.field_number in known for f in unknown_fields.UnknownFieldSet(current)):
            return True
        queue.extend(_sub_messages(current))
    return False


def _parsed(kind: str, data: bytes | bytearray, text: bool) -> Any | None:
    """``data`` as a ``kind`` message (binary, or text format), or None."""
    message = getattr(pb, kind)()
    try:
        if text:
            text_format.Parse(bytes(data).decode("utf-8"), message)
        else:
            message.ParseFromString(bytes(data) if isinstance(data, bytearray) else data)
    except Exception:  # noqa: BLE001 - any parse failure means "not this kind"
        return None
    return message


def identify(data: bytes | bytearray, exclude: str = "", text: bool = False) -> str | None:
    """The first kind (but ``exclude``) that ``data`` plausibly is, without
    mismatched fields; None if none (``text``: read ``data`` as text format)."""
    for kind in KINDS:
        if kind == exclude:
            continue
        message = _parsed(kind, data, text)
        if message is not None and plausible(kind, message) and not mismatched(message):
            return kind
    return None


def looks_like_xspace(data: bytes | bytearray) -> bool:
    """Whether ``data`` plausibly is an XSpace (``*.xplane.pb``): it parses, holds
    a host, device or Task Environment plane and no field of a wrong wire type."""
    message = _parsed("XSpace", data, False)
    return message is not None and _xspace(message) and not mismatched(message)


def wrong_kind_error(
    what: str, expected: str, actual: str, places: Mapping[str, str] = API_PLACES
) -> InvalidInputError:
    """``<what>: expected an OpLogProto, but it looks like a GraphDef; pass it as graph=``."""
    return InvalidInputError(
        f"{what}: expected {article(expected)}, but it looks like {article(actual)}; "
        f"{places[actual]}"
    )
