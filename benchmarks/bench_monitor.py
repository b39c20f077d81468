"""Monitoring overhead: untraced ``Session.run`` steps with and without ``tfprof_lite.Monitor``.

Three measurements:

1. **Wrapper cost** (exact): ``Session.run`` is replaced by a stub and timed
   (best of 5 loops of 200k calls) unpatched, with an active monitor (level 1,
   no sampling: the per-run cost of timing and counting) and with an installed
   but inactive monitor.
2. **Interleaved A/B** on two real models (a 784-256-10 MLP SGD step and a
   ``NoOp`` step, the worst case for a per-step wrapper): one monitor is
   entered and ``--steps`` pairs of steps run with the monitor off (the
   ``Session.run`` dispatcher's listeners emptied: the patched ``run`` passes
   straight through) and on, in alternating order (off-on, on-off: the second
   step of a pair is slower whatever the monitor does). Both halves see the same
   machine conditions, so other load largely cancels out. Configurations: level
   1 without sampling, level 1 and level 2 with the default sampling (one
   FULL_TRACE step every 10 windows of 100 steps), and an A/A control (the
   monitor never switched on: the noise floor of the method on this machine).
3. **Sample cost**: the same interleaving with every monitored step sampled;
   the difference is the cost of one sample (FULL_TRACE run + analysis), shown
   amortised at the default rate (1 step in 1000).

Sessions use one intra-op and one inter-op thread (the monitor's cost is on the
Python side; fewer threads make timings less sensitive to other load). Monitor
lines go to an in-memory stream, ``monitor.jsonl`` to a temporary directory.
Results are printed and written to ``bench_out/monitor.json``.

Run: ``python benchmarks/bench_monitor.py [--steps N] [--quick]``.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from _common import SINGLE_THREAD, stub_run  # noqa: E402

import tfprof_lite  # noqa: E402
from tfprof_lite.session import dispatch  # noqa: E402
from tfprof_lite.session import monitor as monitor_module  # noqa: E402

tf1 = tf.compat.v1
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT_JSON = os.path.join(ROOT, "bench_out", "monitor.json")
CONFIG = SINGLE_THREAD
#: name -> (level, sample_every) of the monitored configurations.
CONFIGS = {"level1_nosample": (1, 0), "level1_sample": (1, 10), "level2_sample": (2, 10)}
DEFAULT_SAMPLED_SHARE = 1 / (monitor_module.DEFAULT_EVERY * monitor_module.DEFAULT_SAMPLE_EVERY)

Step = Callable[[], Any]


def mlp_step(sessions: list[Any]) -> Step:
    """A 784-256-10 MLP SGD step on a batch of 64."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, 784])
        y = tf1.placeholder(tf.int64, [None])
        w1 = tf1.get_variable("w1", [784, 256])
        w2 = tf1.get_variable("w2", [256, 10])
        logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1)), w2)
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
        )
        train = tf1.train.GradientDescentOptimizer(0.01).minimize(loss)
        init = tf1.global_variables_initializer()
    sess = tf1.Session(graph=graph, config=CONFIG)
    sess.run(init)
    sessions.append(sess)
    rng = np.random.default_rng(0)
    feed = {x: rng.random((64, 784), np.float32), y: rng.integers(0, 10, 64)}
    return lambda: sess.run(train, feed_dict=feed)


def noop_step(sessions: list[Any]) -> Step:
    """A ``NoOp`` fetch: the cheapest possible ``Session.run``."""
    graph = tf.Graph()
    with graph.as_default():
        op = tf.no_op()
    sess = tf1.Session(graph=graph, config=CONFIG)
    sessions.append(sess)
    return lambda: sess.run(op)


def interleaved(
    step: Step, steps: int, monitor: tfprof_lite.Monitor, switch_on: bool = True
) -> tuple[float, float]:
    """Per-step microseconds (off, on), alternating step by step under ``monitor``.

    Pairs alternate their order (off-on, on-off, ...): the second step of a pair
    runs measurably slower than the first, whatever the monitor does. With
    ``switch_on=False`` the "on" half stays off too (the A/A noise control).
    """
    clock = time.perf_counter
    totals = {False: 0.0, True: 0.0}
    with monitor:
        active = dispatch._route
        for pair in range(steps):
            for is_on in (False, True) if pair % 2 == 0 else (True, False):
                dispatch._route = active if is_on and switch_on else (None, ())
                start = clock()
                step()
                totals[is_on] += clock() - start
        dispatch._route = active
    return totals[False] / steps * 1e6, totals[True] / steps * 1e6


def measure(step: Step, steps: int, out_dir: str) -> dict[str, Any]:
    """Interleaved timings per configuration and the cost of one sample."""
    for _ in range(200):  # warm-up: executor caches, allocator
        step()
    result: dict[str, Any] = {"steps": steps, "off_us": {}, "on_us": {}, "overhead_pct": {}}
    for name, (level, sample_every) in CONFIGS.items():
        monitor = tfprof_lite.Monitor(
            out_dir, level=level, sample_every=sample_every, stream=io.StringIO()
        )
        off, on = interleaved(step, steps, monitor)
        result["off_us"][name], result["on_us"][name] = off, on
        result["overhead_pct"][name] = 100.0 * (on / off - 1.0)
    control = tfprof_lite.Monitor(None, sample_every=0, stream=io.StringIO())
    off, same = interleaved(step, steps, control, switch_on=False)
    result["aa_control_pct"] = 100.0 * (same / off - 1.0)
    every_step = tfprof_lite.Monitor(
        out_dir, level=2, every=1, sample_every=1, stream=io.StringIO()
    )
    off, on = interleaved(step, 100, every_step)
    result["sample_ms"] = (on - off) / 1000.0
    result["sample_pct_at_defaults"] = 100.0 * (on - off) * DEFAULT_SAMPLED_SHARE / off
    return result


def wrapper_cost_us(calls: int = 200_000) -> dict[str, float]:
    """Per-call microseconds of a stub ``Session.run``: plain, monitored, inactive patch."""
    from tensorflow.python.client import session as tf_session

    base = tf_session.BaseSession
    real = base.__dict__["run"]
    graph = tf.Graph()
    with graph.as_default():
        op = tf.no_op()
    sess = tf1.Session(graph=graph, config=CONFIG)

    def loop() -> float:
        start = time.perf_counter()
        for _ in range(calls):
            sess.run(op)
        return (time.perf_counter() - start) / calls * 1e6

    base.run = stub_run
    try:
        plain = min(loop() for _ in range(5))
        with tfprof_lite.Monitor(None, sample_every=0, stream=io.StringIO()):
            active = min(loop() for _ in range(5))
            saved, dispatch._route = dispatch._route, (None, ())
            inactive = min(loop() for _ in range(5))
            dispatch._route = saved
    finally:
        base.run = real
        sess.close()
    return {"stub_us": plain, "cost_us": active - plain, "inactive_cost_us": inactive - plain}


def report(results: dict[str, Any]) -> None:
    """Print the results table."""
    wrapper = results["wrapper"]
    print(
        f"wrapper cost per untraced run: {wrapper['cost_us']:.2f} us monitored, "
        f"{wrapper['inactive_cost_us']:.2f} us installed but off (stub Session.run)"
    )
    print(f"{'model':<16} {'config':<16} {'off us':>9} {'on us':>9} {'overhead':>9}")
    for name in ("mlp_784_256_10", "noop"):
        res = results[name]
        for config, pct in res["overhead_pct"].items():
            print(
                f"{name:<16} {config:<16} {res['off_us'][config]:9.1f} "
                f"{res['on_us'][config]:9.1f} {pct:8.2f}%"
            )
        plain = res["off_us"]["level1_nosample"]
        res["wrapper_pct"] = 100.0 * wrapper["cost_us"] / plain
        print(f"{name:<16} {'A/A control':<16} {'':>9} {'':>9} {res['aa_control_pct']:8.2f}%")
        print(f"{name:<16} {'wrapper cost':<16} {'':>9} {'':>9} {res['wrapper_pct']:8.2f}%")
        print(
            f"{name:<16} {'one sample':<16} {res['sample_ms']:8.2f}ms {'':>9} "
            f"{res['sample_pct_at_defaults']:8.2f}% amortised (1 step in 1000)"
        )


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print the table, write ``bench_out/monitor.json``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=10_000, help="off/on step pairs")
    parser.add_argument("--quick", action="store_true", help="--steps 2000")
    args = parser.parse_args(argv)
    steps = 2000 if args.quick else args.steps
    sessions: list[Any] = []
    results: dict[str, Any] = {
        "python": platform.python_version(),
        "tensorflow": tf.__version__,
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "wrapper": wrapper_cost_us(),
    }
    with tempfile.TemporaryDirectory() as out_dir:
        for name, build in (("mlp_784_256_10", mlp_step), ("noop", noop_step)):
            results[name] = measure(build(sessions), steps, out_dir)
    for sess in sessions:
        sess.close()
    report(results)
    os.makedirs(os.path.dirname(OUT_JSON), exist_ok=True)
    with open(OUT_JSON, "w", encoding="utf-8") as handle:
        json.dump(results, handle, indent=1)
    print(f"wrote {OUT_JSON}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
