"""The ``Session.run`` dispatcher's listener protocol, with fake listeners (no TensorFlow)."""

from __future__ import annotations

from typing import Any

import pytest

from tfprof_lite.session import dispatch


class FakeCall:
    """A call record that runs ``result`` or raises ``error``."""

    is_callable = False

    def __init__(self, log: list[str], error: Exception | None = None) -> None:
        self.log = log
        self.error = error
        self.traced = False
        self.run_metadata = None

    def request_trace(self) -> None:
        self.traced = True

    def run(self) -> str:
        self.log.append(f"run traced={self.traced}")
        if self.error is not None:
            raise self.error
        return "result"


class Listener:
    """Records what the dispatcher calls; takes the fast path unless ``fast`` is False."""

    def __init__(self, name: str, log: list[str], fast: bool = True, trace: bool = False):
        self.name, self.log, self.fast, self.trace = name, log, fast, trace

    def begin_untraced(self, run_metadata: Any) -> Any:
        self.log.append(f"{self.name}.begin_untraced")
        return self.name if self.fast else None

    def end_untraced(self, ticket: Any, failed: bool, traced: bool) -> None:
        self.log.append(f"{self.name}.end_untraced failed={failed} traced={traced}")

    def before_run(self, call: Any) -> Any:
        self.log.append(f"{self.name}.before_run")
        if self.trace:
            call.request_trace()
        return self.name

    def after_run(self, call: Any, ticket: Any, failed: bool) -> None:
        self.log.append(f"{self.name}.after_run failed={failed}")


def chain(listeners: tuple[Any, ...], log: list[str], error: Exception | None = None) -> Any:
    def invoke(*args: Any) -> str:
        log.append("run plain")
        if error is not None:
            raise error
        return "result"

    def make_call(*args: Any) -> FakeCall:
        return FakeCall(log, error)

    run = dispatch._pair if len(listeners) == 2 else dispatch._chain
    return run(listeners, None, invoke, make_call, (), {})


@pytest.mark.parametrize("count", [2, 3])
def test_all_fast_runs_plain_and_ends_in_reverse(count: int) -> None:
    log: list[str] = []
    listeners = tuple(Listener(str(i), log) for i in range(count))
    assert chain(listeners, log) == "result"
    names = [str(i) for i in range(count)]
    assert log == [
        *(f"{n}.begin_untraced" for n in names),
        "run plain",
        *(f"{n}.end_untraced failed=False traced=False" for n in reversed(names)),
    ]


@pytest.mark.parametrize("count", [2, 3])
def test_inner_slow_listener_traces_and_outer_fast_ones_are_told(count: int) -> None:
    log: list[str] = []
    outer = [Listener(str(i), log) for i in range(count - 1)]
    inner = Listener("inner", log, fast=False, trace=True)
    assert chain((*outer, inner), log) == "result"
    expected = [
        "run traced=True",
        "inner.after_run failed=False",
        *(f"{o.name}.end_untraced failed=False traced=True" for o in reversed(outer)),
    ]
    assert log[-len(expected) :] == expected
    assert log.count("inner.before_run") == 1 and log.count("inner.begin_untraced") == 1


@pytest.mark.parametrize("count", [2, 3])
def test_errors_propagate_after_every_listener_was_told(count: int) -> None:
    log: list[str] = []
    first = Listener("first", log, fast=False)
    rest = [Listener(str(i), log) for i in range(count - 1)]
    with pytest.raises(KeyError):
        chain((first, *rest), log, KeyError("boom"))
    assert log[-1] == "first.after_run failed=True"
    assert log.count("first.before_run") == 1
    assert all(f"{r.name}.before_run" in log for r in rest)  # the rest on the full path
