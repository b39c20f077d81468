"""The number formatters of tfprof's text reports at their boundaries.

Expected strings are what TensorFlow 2.21's tfprof prints (C ``%.2f`` after
dividing by 1e3 / 1e6 / 1e9, decimal units, no GB): thresholds at 1000, 1e6 and
1e9, the ``1000.00`` artefact just below a threshold, and C rounding of the
binary value (``1.005`` -> ``1.00``; exact ties round to even).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tfprof_lite.base.units import format_memory, format_number, format_shape, format_time

NUMBERS = [
    (0, "0"),
    (1, "1"),
    (999, "999"),
    (1000, "1.00k"),
    (1005, "1.00k"),
    (1015, "1.01k"),
    (1125, "1.12k"),
    (1135, "1.14k"),
    (2675, "2.67k"),
    (999994, "999.99k"),
    (999995, "1000.00k"),
    (999999, "1000.00k"),
    (1000000, "1.00m"),
    (1234567, "1.23m"),
    (999999999, "1000.00m"),
    (1000000000, "1.00b"),
    (123456789012, "123.46b"),
    (10**15, "1000000.00b"),
    (-5, "-5"),
    (-123456, "-123456"),
]

TIMES = [
    (0, "0us"),
    (1, "1us"),
    (999, "999us"),
    (1000, "1.00ms"),
    (1005, "1.00ms"),
    (999994, "999.99ms"),
    (999995, "1000.00ms"),
    (999999, "1000.00ms"),
    (1000000, "1.00sec"),
    (1500000, "1.50sec"),
    (999999999, "1000.00sec"),
    (1000000000, "1000.00sec"),
    (123456789012, "123456.79sec"),
    (-7, "-7us"),
]

MEMORY = [
    (0, "0B"),
    (1, "1B"),
    (999, "999B"),
    (1000, "1.00KB"),
    (1024, "1.02KB"),
    (999994, "999.99KB"),
    (999995, "1000.00KB"),
    (999999, "1000.00KB"),
    (1000000, "1.00MB"),
    (1048576, "1.05MB"),
    (999999999, "1000.00MB"),
    (1000000000, "1000.00MB"),
    (10**12, "1000000.00MB"),
    (-1, "-1B"),
]

SHAPES = [
    ([], ""),
    ([1], "1"),
    ([0], "0"),
    ([784, 256], "784x256"),
    ([-1, 3], "-1x3"),
    ([1000, 1000, 1000], "1000x1000x1000"),
]


@pytest.mark.parametrize(("value", "text"), NUMBERS)
def test_format_number(value: int, text: str) -> None:
    assert format_number(value) == text


@pytest.mark.parametrize(("value", "text"), TIMES)
def test_format_time(value: int, text: str) -> None:
    assert format_time(value) == text


@pytest.mark.parametrize(("value", "text"), MEMORY)
def test_format_memory(value: int, text: str) -> None:
    assert format_memory(value) == text


@pytest.mark.parametrize(("dims", "text"), SHAPES)
def test_format_shape(dims: list[int], text: str) -> None:
    assert format_shape(dims) == text


UNITS: list[tuple[Callable[[int], str], tuple[str, str, str]]] = [
    (format_number, ("", "k", "m")),
    (format_time, ("us", "ms", "sec")),
    (format_memory, ("B", "KB", "MB")),
]


@pytest.mark.parametrize(("fmt", "units"), UNITS, ids=["number", "time", "memory"])
def test_units_switch_at_1000_and_1e6(fmt: Callable[[int], str], units: tuple[str, ...]) -> None:
    """999 stays integral, 1000 is ``1.00<next unit>``, 999999 rounds up to ``1000.00``."""
    assert fmt(999) == f"999{units[0]}"
    assert fmt(1000) == f"1.00{units[1]}"
    assert fmt(999999) == f"1000.00{units[1]}"
    assert fmt(10**6) == f"1.00{units[2]}"


def test_numpy_integers_format_like_python_ints() -> None:
    """Stats arrays are int64; formatting an np.int64 gives the same text."""
    np = pytest.importorskip("numpy")
    for value, text in NUMBERS:
        assert format_number(np.int64(value)) == text
    for value, text in MEMORY:
        assert format_memory(np.int64(value)) == text
