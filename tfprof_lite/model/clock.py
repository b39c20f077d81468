"""One clock for the tasks of a distributed run.

Every task stamps its records with its own host's clock. Tasks on one host
share it; for tasks on different hosts the offset is estimated from the tensor
transfers between them: a tensor cannot reach the receiver before its producer
finished on the sender, so each transfer from task ``a`` to task ``b`` bounds
``offset[b] - offset[a] >= producer_end(a) - receive_end(b)`` from below, and a
transfer the other way bounds it from above. Per pair of tasks the smallest
correction inside those bounds is taken (none when the records already agree;
the middle of the bounds when they contradict each other), and offsets are
chained from a reference task (the first worker) along the pairs. A task with
no transfer to a task already placed keeps offset 0 and says so.

``aligned time = recorded time + offset[task]``.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

__all__ = ["ClockEstimate", "PairBounds", "estimate_offsets"]


@dataclass
class PairBounds:
    """Bounds on ``offset[b] - offset[a]`` for one ordered pair of tasks."""

    low: float = float("-inf")
    high: float = float("inf")
    pairs: int = 0

    def choose(self) -> int:
        """The smallest correction inside the bounds (their middle when they cross)."""
        low, high = self.low, self.high
        if low > high:
            return int(round((low + high) / 2))
        if low <= 0 <= high:
            return 0
        return int(low) if low > 0 else int(high)


@dataclass
class ClockEstimate:
    """Per task the offset (microseconds) and how it was found."""

    reference: str = ""
    offsets: dict[str, int] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)

    @property
    def largest(self) -> int:
        """The largest absolute correction applied."""
        return max((abs(v) for v in self.offsets.values()), default=0)


def _bounds(
    constraints: list[tuple[str, str, int]],
) -> dict[tuple[str, str], PairBounds]:
    """Bounds per unordered pair (keyed ``(a, b)`` with ``a < b``) on ``off[b] - off[a]``."""
    out: dict[tuple[str, str], PairBounds] = {}
    for src, dst, gap in constraints:
        if src == dst:
            continue
        if src < dst:  # off[dst] - off[src] >= gap
            b = out.setdefault((src, dst), PairBounds())
            b.low = max(b.low, gap)
        else:  # off[src] - off[dst] <= -gap
            b = out.setdefault((dst, src), PairBounds())
            b.high = min(b.high, -gap)
        b.pairs += 1
    return out


Edges = dict[str, list[tuple[str, int, int]]]


def _edges(constraints: list[tuple[str, str, int]], hosts: dict[str, str]) -> Edges:
    """Task -> (neighbour, chosen offset difference, transfers) for every pair of
    tasks with transfers; tasks of one host differ by 0."""
    edges: Edges = {}
    for (a, b), bound in _bounds(constraints).items():
        same = bool(hosts.get(a)) and hosts.get(a) == hosts.get(b)
        delta = 0 if same else bound.choose()
        edges.setdefault(a, []).append((b, delta, bound.pairs))
        edges.setdefault(b, []).append((a, -delta, bound.pairs))
    return edges


def _chain(est: ClockEstimate, edges: Edges, hosts: dict[str, str]) -> None:
    """Offsets from the reference along the pairs, busiest pairs first."""
    est.offsets[est.reference] = 0
    est.notes[est.reference] = "reference clock"
    queue = deque([est.reference])
    while queue:
        cur = queue.popleft()
        for nxt, delta, count in sorted(edges.get(cur, ()), key=lambda e: -e[2]):
            if nxt in est.offsets:
                continue
            est.offsets[nxt] = est.offsets[cur] + delta
            same = hosts.get(cur) and hosts.get(cur) == hosts.get(nxt)
            est.notes[nxt] = "same host" if same else f"{count} transfer(s) with {cur}"
            queue.append(nxt)


def _place_rest(est: ClockEstimate, tasks: list[str], hosts: dict[str, str]) -> None:
    """Tasks not reached: a placed task's offset when on its host, else 0."""
    placed_hosts = {hosts[t]: t for t in est.offsets if hosts.get(t)}
    for task in tasks:
        peer = placed_hosts.get(hosts.get(task, ""))
        if task not in est.offsets and peer is not None:
            est.offsets[task] = est.offsets[peer]
            est.notes[task] = f"same host as {peer}"
        elif task not in est.offsets:
            est.offsets[task] = 0
            est.notes[task] = "no transfer to an aligned task: not corrected"


def estimate_offsets(
    tasks: list[str],
    constraints: list[tuple[str, str, int]],
    hosts: dict[str, str] | None = None,
    same_clock: bool = False,
) -> ClockEstimate:
    """Offsets that put every task on the reference task's clock.

    Args:
        tasks: every task, in display order (the reference is the first task
            outside ``ps`` jobs, else the first task).
        constraints: ``(sender, receiver, producer_end - receive_end)`` per
            transfer, both ends on their own task's clock.
        hosts: task -> host name where known; tasks of one host get offset 0
            relative to each other.
        same_clock: every task shares one clock (one host): no correction.
    """
    hosts = hosts or {}
    est = ClockEstimate()
    if not tasks:
        return est
    workers = [t for t in tasks if not t.startswith("/job:ps/")]
    est.reference = (workers or tasks)[0]
    if same_clock:
        est.offsets = dict.fromkeys(tasks, 0)
        est.notes = dict.fromkeys(tasks, "one host (as told)")
        return est
    _chain(est, _edges(constraints, hosts), hosts)
    _place_rest(est, tasks, hosts)
    return est
