"""An allocator's timeline (deltas summed per time, in time order, from a
baseline that keeps every point at or above 0) on hand-made event lists."""

from __future__ import annotations

import random

from tfprof_lite.analysis.memory import _Series, _timeline


def _spelled_out(
    times: list[int], deltas: list[int], start: int
) -> tuple[list[tuple[int, int]], list[int], int]:
    per_time: dict[int, int] = {}
    for micros, delta in zip(times, deltas):
        per_time[micros] = per_time.get(micros, 0) + delta
    running, lowest, sums = 0, 0, []
    for micros in sorted(per_time):
        running += per_time[micros]
        lowest = min(lowest, running)
        sums.append((micros, running))
    origin = min(start, sums[0][0]) if sums else start
    points = [(0, -lowest)] + [(m - origin, total - lowest) for m, total in sums]
    return points, [origin - 1] + [m for m, _ in sums], -lowest


def test_timeline_equals_the_rule() -> None:
    rng = random.Random(11)
    for _ in range(400):
        n = rng.randrange(0, 30)
        s = _Series("GPU_0_bfc", exact=True)
        for _ in range(n):
            s.add(
                rng.randrange(3),
                rng.randrange(50, 90),
                rng.choice((-1, 1)) * rng.randrange(1 << 40),
            )
        start = rng.randrange(40, 100)
        got = _timeline(s, start)
        assert got == _spelled_out(s.times, s.deltas, start)
        assert all(isinstance(v, int) for point in got[0] for v in point)


def test_frees_before_any_allocation_raise_the_baseline() -> None:
    s = _Series("cpu", exact=True)
    for micros, delta in ((10, 64), (5, -32), (20, -32), (20, 16)):
        s.add(0, micros, delta)
    assert _timeline(s, 15) == ([(0, 32), (0, 0), (5, 64), (15, 48)], [4, 5, 10, 20], 32)
    assert _timeline(_Series("cpu", exact=True), 7) == ([(0, 0)], [6], 0)
