"""TensorFlow data types by name: the ``DataType`` enum and a node's output dtype."""

from __future__ import annotations

from tfprof_lite.model.profile import ProfileModel

__all__ = ["dtype_name", "node_dtype"]

_DTYPES = {
    1: "float32",
    2: "float64",
    3: "int32",
    4: "uint8",
    5: "int16",
    6: "int8",
    7: "string",
    8: "complex64",
    9: "int64",
    10: "bool",
    11: "qint8",
    12: "quint8",
    13: "qint32",
    14: "bfloat16",
    15: "qint16",
    16: "quint16",
    17: "uint16",
    18: "complex128",
    19: "float16",
    20: "resource",
    21: "variant",
    22: "uint32",
    23: "uint64",
}


def dtype_name(dtype: int) -> str:
    """The numpy-style name of a DataType enum value (``""`` when unset)."""
    if dtype <= 0:
        return ""
    return _DTYPES.get(dtype if dtype < 100 else dtype - 100, f"dtype{dtype}")


#: Graph attributes naming the type of an op's outputs, most specific first.
_DTYPE_ATTRS = ("out_type", "DstT", "dtype", "T")


def node_dtype(model: ProfileModel, nid: int) -> str:
    """The output dtype of node ``nid`` from its graph attributes (``T``,
    ``dtype``, ...); ``""`` when the profile does not say."""
    attrs = model.attrs[nid]
    for key in _DTYPE_ATTRS:
        raw = attrs.get(key)
        if raw is None:
            continue
        from google.protobuf.message import DecodeError  # protobuf: only for nodes with attributes

        from tfprof_lite.proto import messages as pb

        try:
            value = pb.AttrValue.FromString(raw)
        except DecodeError:  # a malformed attribute only loses the dtype
            continue
        if value.WhichOneof("value") == "type":
            return dtype_name(value.type)
    return ""
