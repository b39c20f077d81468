"""TensorFlow's objects recognised without importing TensorFlow."""

from __future__ import annotations

__all__ = ["is_tf_graph"]


def is_tf_graph(obj: object) -> bool:
    """True for a ``tf.Graph`` (checked without importing TensorFlow)."""
    for cls in type(obj).__mro__:
        if cls.__name__ == "Graph" and cls.__module__.startswith("tensorflow"):
            return True
    return False
