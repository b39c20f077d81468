"""Capture overhead: ``tfprof_lite.ProfileContext`` on untraced and on traced steps.

Two TF1-style training loops (``tf.compat.v1.Session``, one intra-op and one
inter-op thread, SGD on a dense net with biases and ReLUs): ``dense_1ms``
(784-256-10, batch 64, about 1 ms a step here) and ``dense_10ms``
(784-1024-1024-10, batch 128, about 10 ms). Measurements:

1. **Wrapper cost** (exact): ``Session.run`` is replaced by a do-nothing stub
   (``_common.stub_run``, as ``bench_monitor.py`` does) and a loop of calls is
   timed without and inside a ``ProfileContext`` whose steps are all untraced
   (best of 5 loops): the difference is what the context adds to each call.
2. **Interleaved A/B** per model: one ``ProfileContext(trace_steps=range(3),
   dump_steps=[2])`` is entered, its first steps (traced, dumped) and a warm-up
   run, then ``--pairs`` pairs of untraced steps alternate between the context's
   patched ``Session.run`` ("on") and the original one ("off"; the class
   attribute is swapped between steps, outside the timed call), in alternating
   order (off-on, on-off). Overhead = median on / median off - 1. An A/A control
   (both halves off) shows the noise floor of the method on this machine.
3. **FULL_TRACE cost** per model: the median step time of a plain
   ``sess.run(..., options=FULL_TRACE)`` against an untraced one, and a
   ``ProfileContext`` tracing and dumping every step of ``--traced`` steps: the
   traced step as the training loop sees it, and (timed inside) its
   ``add_step`` and its dump of ``profile_<step>``. The first traced step also
   builds the profiler for the graph; it is reported on its own.

Prints the tables and writes ``bench_out/capture.json``. Run:
``python benchmarks/bench_capture.py [--pairs N] [--quick]``; see
``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
from _common import OUT_DIR, ROOT, SINGLE_THREAD, machine_info, stub_run, tf, tf1, write_json
from tensorflow.python.client import session as tf_session

import tfprof_lite
from tfprof_lite.session import dispatch
from tfprof_lite.session.recorder import ProfileRecorder

OUT_JSON = os.path.join(OUT_DIR, "capture.json")
#: name -> (layer sizes, batch, A/B pairs by default).
MODELS = {
    "dense_1ms": ((784, 256, 10), 64, 3000),
    "dense_10ms": ((784, 1024, 1024, 10), 128, 300),
}
FULL_TRACE = tf1.RunOptions(trace_level=tf1.RunOptions.FULL_TRACE)
BASE = tf_session.BaseSession


@dataclass
class DenseNet:
    """A training step of a dense net in its own graph and session."""

    graph: Any
    session: Any
    train: Any
    feed: dict[Any, Any]

    def step(self) -> None:
        """One untraced SGD step (``Session.run`` as the training loop calls it)."""
        self.session.run(self.train, feed_dict=self.feed)

    def traced_step(self) -> Any:
        """One FULL_TRACE step; returns its RunMetadata."""
        meta = tf1.RunMetadata()
        self.session.run(self.train, feed_dict=self.feed, options=FULL_TRACE, run_metadata=meta)
        return meta


def dense_net(sizes: tuple[int, ...], batch: int) -> DenseNet:
    """SGD on ``sizes[0]`` inputs through ReLU layers to ``sizes[-1]`` classes."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, sizes[0]], name="x")
        y = tf1.placeholder(tf.int64, [None], name="y")
        h = x
        for i, (fan_in, fan_out) in enumerate(zip(sizes, sizes[1:])):
            with tf1.variable_scope(f"dense_{i}"):
                w = tf1.get_variable("w", [fan_in, fan_out])
                b = tf1.get_variable("b", [fan_out], initializer=tf1.zeros_initializer())
                h = tf.matmul(h, w) + b
                if i < len(sizes) - 2:
                    h = tf.nn.relu(h)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=h))
        train = tf1.train.GradientDescentOptimizer(0.01).minimize(loss)
        init = tf1.global_variables_initializer()
    session = tf1.Session(graph=graph, config=SINGLE_THREAD)
    session.run(init)
    rng = np.random.default_rng(0)
    feed = {x: rng.random((batch, sizes[0]), np.float32), y: rng.integers(0, sizes[-1], batch)}
    return DenseNet(graph, session, train, feed)


def _median_us(seconds: list[float]) -> float:
    return statistics.median(seconds) * 1e6


# ------------------------------------------------------------------ 1. wrapper cost
def wrapper_cost_us(calls: int, tmp: str) -> dict[str, float]:
    """Per-call microseconds of a stub ``Session.run``, plain and inside a context."""
    graph = tf.Graph()
    with graph.as_default():
        op = tf.no_op()
    sess = tf1.Session(graph=graph, config=SINGLE_THREAD)

    def loop() -> float:
        start = time.perf_counter()
        for _ in range(calls):
            sess.run(op)
        return (time.perf_counter() - start) / calls * 1e6

    real = BASE.__dict__["run"]
    BASE.run = stub_run
    try:
        plain = min(loop() for _ in range(5))
        with tfprof_lite.ProfileContext(tmp, trace_steps=[], dump_steps=[]):
            inside = min(loop() for _ in range(5))
    finally:
        BASE.run = real
        sess.close()
    return {"stub_us": plain, "cost_us": inside - plain}


# ------------------------------------------------------------------ 2. A/B
def interleaved(
    step: Callable[[], None], pairs: int, on: Any, off: Any
) -> tuple[list[float], list[float]]:
    """Seconds of ``pairs`` steps with ``BaseSession.run`` set to ``off`` and to ``on``,
    alternating (off-on, on-off, ...); returns (off times, on times)."""
    clock = time.perf_counter
    times: dict[bool, list[float]] = {False: [], True: []}
    for pair in range(pairs):
        for is_on in (False, True) if pair % 2 == 0 else (True, False):
            BASE.run = on if is_on else off
            start = clock()
            step()
            times[is_on].append(clock() - start)
    return times[False], times[True]


def ab_overhead(net: DenseNet, pairs: int, tmp: str) -> dict[str, Any]:
    """Median untraced step with and without an active ProfileContext, and A/A."""
    for _ in range(50):  # warm-up: executor caches, allocator
        net.step()
    with tfprof_lite.ProfileContext(tmp, trace_steps=range(3), dump_steps=[2]) as pctx:
        wrapper = BASE.__dict__["run"]
        saved = dispatch.originals()
        original = saved.run if saved is not None else wrapper
        for _ in range(3 + 50):  # steps 0-2 traced (2 dumped), then untraced warm-up
            net.step()
        try:
            off, on = interleaved(net.step, pairs, wrapper, original)
            off_aa, on_aa = interleaved(net.step, pairs, original, original)
        finally:
            BASE.run = wrapper  # the context removes its own patch on exit
        traced = pctx.profiler.model.sorted_steps() if pctx.profiler is not None else []
    off_us, on_us = _median_us(off), _median_us(on)
    return {
        "pairs": pairs,
        "off_us": off_us,
        "on_us": on_us,
        "overhead_pct": 100.0 * (on_us / off_us - 1.0),
        "aa_control_pct": 100.0 * (_median_us(on_aa) / _median_us(off_aa) - 1.0),
        "traced_steps_before": traced,
    }


# ------------------------------------------------------------------ 3. FULL_TRACE
@contextmanager
def _timing(owner: type, name: str, into: list[float]) -> Iterator[None]:
    """Append the seconds of every call of ``owner.name`` to ``into`` meanwhile."""
    original = owner.__dict__[name]

    @functools.wraps(original)
    def timed_call(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            into.append(time.perf_counter() - start)

    setattr(owner, name, timed_call)
    try:
        yield
    finally:
        setattr(owner, name, original)


def full_trace_cost(net: DenseNet, traced: int, untraced_us: float, tmp: str) -> dict[str, Any]:
    """Plain FULL_TRACE runs, then a context tracing and dumping every step."""
    runs = []
    for _ in range(traced):
        start = time.perf_counter()
        net.traced_step()
        runs.append(time.perf_counter() - start)
    steps: list[float] = []
    add_steps: list[float] = []
    dumps: list[float] = []
    out_dir = os.path.join(tmp, "traced")
    every = range(traced)
    recorder = ProfileRecorder
    with (
        _timing(recorder, "add_trace", add_steps),
        _timing(recorder, "dump", dumps),
        tfprof_lite.ProfileContext(out_dir, trace_steps=every, dump_steps=every),
    ):
        for _ in every:
            start = time.perf_counter()
            net.step()
            steps.append(time.perf_counter() - start)
    profile_kb = os.path.getsize(os.path.join(out_dir, f"profile_{traced - 1}")) / 1024
    return {
        "traced_steps": traced,
        "untraced_step_us": untraced_us,
        "full_trace_run_us": _median_us(runs),
        "full_trace_run_x": _median_us(runs) / untraced_us,
        "first_traced_step_ms": steps[0] * 1e3,
        "first_add_step_ms": add_steps[0] * 1e3,
        "traced_step_us": _median_us(steps[1:]),
        "traced_step_x": _median_us(steps[1:]) / untraced_us,
        "add_step_ms": statistics.median(add_steps[1:]) * 1e3,
        "dump_ms": statistics.median(dumps) * 1e3,
        "last_profile_kb": profile_kb,
    }


# ------------------------------------------------------------------ report
def report(results: dict[str, Any]) -> None:
    """Print the tables."""
    wrapper = results["wrapper"]
    print(
        f"wrapper cost per untraced Session.run: {wrapper['cost_us']:.2f} us "
        f"(stub Session.run alone: {wrapper['stub_us']:.2f} us)"
    )
    print(f"\n{'model':<12}{'off us':>9}{'on us':>9}{'overhead':>10}{'A/A':>8}{'wrapper/step':>14}")
    for name in MODELS:
        ab = results[name]["ab"]
        share = 100.0 * wrapper["cost_us"] / ab["off_us"]
        print(
            f"{name:<12}{ab['off_us']:>9.1f}{ab['on_us']:>9.1f}{ab['overhead_pct']:>9.2f}%"
            f"{ab['aa_control_pct']:>7.2f}%{share:>13.3f}%"
        )
    print(
        f"\n{'model':<12}{'untraced':>10}{'FULL_TRACE':>12}{'traced step':>13}"
        f"{'add_step':>10}{'dump':>8}{'1st step':>10}{'1st add':>9}"
    )
    print(f"{'':<12}{'us':>10}{'us':>12}{'us':>13}{'ms':>10}{'ms':>8}{'ms':>10}{'ms':>9}")
    for name in MODELS:
        ft = results[name]["full_trace"]
        print(
            f"{name:<12}{ft['untraced_step_us']:>10.1f}{ft['full_trace_run_us']:>12.1f}"
            f"{ft['traced_step_us']:>13.1f}{ft['add_step_ms']:>10.2f}{ft['dump_ms']:>8.2f}"
            f"{ft['first_traced_step_ms']:>10.1f}{ft['first_add_step_ms']:>9.1f}"
        )


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print the tables, write ``bench_out/capture.json``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=None, help="A/B step pairs per model")
    parser.add_argument("--traced", type=int, default=20, help="FULL_TRACE steps per model")
    parser.add_argument("--calls", type=int, default=100_000, help="stub calls per loop")
    parser.add_argument("--quick", action="store_true", help="few pairs, steps and calls")
    parser.add_argument("--out", default=OUT_JSON, help="JSON output path")
    args = parser.parse_args(argv)
    if args.quick:
        args.traced, args.calls = min(args.traced, 4), min(args.calls, 10_000)
    results: dict[str, Any] = {**machine_info()}
    with tempfile.TemporaryDirectory(prefix="tfprof_bench-") as tmp:
        results["wrapper"] = wrapper_cost_us(args.calls, tmp)
        for name, (sizes, batch, pairs) in MODELS.items():
            net = dense_net(sizes, batch)
            count = 20 if args.quick else (args.pairs or pairs)
            ab = ab_overhead(net, count, os.path.join(tmp, name))
            full = full_trace_cost(net, args.traced, ab["off_us"], os.path.join(tmp, name))
            results[name] = {"sizes": sizes, "batch": batch, "ab": ab, "full_trace": full}
            net.session.close()
            print(f"  {name}: done", flush=True)
    print()
    report(results)
    write_json(args.out, results)
    print(f"wrote {os.path.relpath(args.out, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
