"""The regex-free label split of ``outputs/chrome_trace/labels.py`` equals TensorFlow's regex;
the collector pause around building a trace."""

from __future__ import annotations

import gc
import random
import re

import pytest

from tfprof_lite.outputs.chrome_trace.formatter import collection_paused
from tfprof_lite.outputs.chrome_trace.labels import op_labels, parse_op_label, split_op_label

TF_LABEL = re.compile(r"(.*) = (.*)\((.*)\)")  # tensorflow/python/client/timeline.py
PIECES = ["a", "b", " ", "=", "(", ")", "\n", " = ", ", ", ":", "é", '"', "\\"]


def _expected(label: str) -> tuple[str, str, list[str]]:
    match = TF_LABEL.match(label)
    if match is None:
        return "unknown", "unknown", []
    name, op, inputs = match.groups()
    return name, op, inputs.split(", ") if inputs else []


def _labels() -> list[str]:
    rng = random.Random(7)
    made = ["".join(rng.choice(PIECES) for _ in range(rng.randint(0, 14))) for _ in range(20000)]
    return [
        "",
        "x = Const()",
        "mm = MatMul(x/_3, w/read)",
        "a = b = Op(c)",
        "a = Op(b(c), d)",
        "a = Op(x) trailing",
        "a = Op(x)\nb = Op(y)",
        "\na = Op(x)",
        " = (",
        " = ()",
        "not a label",
        *made,
    ]


@pytest.mark.parametrize("label", _labels()[:11])
def test_known_labels(label: str) -> None:
    assert parse_op_label(label) == _expected(label)


@pytest.mark.parametrize("newlines", [True, False], ids=["with-newlines", "one-line"])
def test_random_labels(newlines: bool) -> None:
    """With and without newlines (the pattern's ``.`` stops at one), label by label
    and a device's column of labels."""
    labels = _labels() if newlines else [x for x in _labels() if "\n" not in x]
    assert any("\n" in label for label in labels) is newlines
    assert [parse_op_label(label) for label in labels] == [_expected(x) for x in labels]
    names = ["RecvTensor" if i % 50 == 0 else f"n{i}" for i in range(len(labels))]
    ops, inputs = op_labels(names, labels)
    for name, label, op, text in zip(names, labels, ops, inputs):
        if name == "RecvTensor":
            assert (op, text) == ("RecvTensor", "")
            continue
        match = TF_LABEL.match(label)
        assert (op, text) == ((match.group(2), match.group(3)) if match else ("unknown", ""))


def test_split_positions() -> None:
    assert split_op_label("n = Op(a, b)") == (1, 6, 11)
    assert split_op_label("no match")[0] == -1


def test_collection_paused_restores_the_collector() -> None:
    """Garbage collection is off while a trace is built and as it was afterwards."""
    was = gc.isenabled()
    try:
        for before in (True, False):
            (gc.enable if before else gc.disable)()
            with collection_paused():
                assert not gc.isenabled()
            assert gc.isenabled() is before
        gc.enable()
        with pytest.raises(ValueError), collection_paused():
            raise ValueError("inside")
        assert gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()
