"""Run fuzz cases in forked worker processes, so crashes and hangs stay contained.

The parent forks one worker per batch of cases. The worker builds each case from
its number (:func:`tests.fuzz.cases.make_case`), runs it under a per-input alarm
and writes one JSON line per outcome to a pipe. If the worker dies, or sends
nothing for ``timeout + grace`` seconds (a hang the alarm could not break), the
parent records the case being run as ``other`` (``WorkerDied``/``WorkerStuck``),
kills the worker and carries on with a new one from the next case.
"""

from __future__ import annotations

import json
import logging
import os
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.fuzz.cases import Case, Corpus, make_case
from tests.fuzz.targets import Outcome, classify_cli, cli_argv, execute, write_files

__all__ = [
    "MEMORY_LIMIT",
    "RunConfig",
    "run_cases",
    "run_cli_subprocess",
    "run_in_worker",
]

#: Address-space limit of a worker: a runaway allocation fails there with
#: MemoryError instead of exhausting the shared machine.
MEMORY_LIMIT = 3 << 30
_REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class RunConfig:
    """How to run cases.

    Attributes:
        seed: the campaign seed (cases are ``make_case(corpus, target, seed, i)``).
        timeout: per-input limit, in seconds (the alarm in the worker).
        batch: cases per worker process.
        grace: extra seconds of silence before a worker counts as stuck.
    """

    seed: int = 0
    timeout: float = 10.0
    batch: int = 200
    grace: float = 20.0


def _worker_setup() -> None:
    """Quiet, bounded worker: no output on the terminal, no logging, memory limit."""
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (lives as long as the worker)
    sys.stderr = open(os.devnull, "w")  # noqa: SIM115
    logging.disable(logging.CRITICAL)
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _run_one(case: Case, timeout: float, root: str) -> Outcome:
    scratch = Path(tempfile.mkdtemp(prefix="case-", dir=root))
    try:
        return execute(case, scratch, timeout)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _worker(
    write_fd: int,
    cases: Sequence[Case | tuple[str, int]],
    corpus: Corpus,
    config: RunConfig,
    root: str,
) -> None:
    _worker_setup()
    for item in cases:
        case = item if isinstance(item, Case) else make_case(corpus, *item, config.seed)
        line = json.dumps(_run_one(case, config.timeout, root).to_dict()) + "\n"
        os.write(write_fd, line.encode())


def _spec(item: Case | tuple[str, int]) -> tuple[str, int]:
    return (item.target, item.index) if isinstance(item, Case) else item


def _read_lines(fd: int, deadline_s: float) -> Iterator[str | None]:
    """Lines from the worker; None when it is silent past the deadline; ends at EOF."""
    buffer = b""
    while True:
        ready, _, _ = select.select([fd], [], [], deadline_s)
        if not ready:
            yield None
            return
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            yield line.decode()


def _stop(pid: int) -> str:
    """Kill (if needed) and reap the worker; describe how it ended."""
    done, status = os.waitpid(pid, os.WNOHANG)
    if not done:
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        return "killed"
    if os.WIFSIGNALED(status):
        return f"signal {os.WTERMSIG(status)}"
    return f"exit {os.WEXITSTATUS(status)}"


def run_in_worker(
    cases: Sequence[Case | tuple[str, int]], corpus: Corpus, config: RunConfig
) -> list[Outcome]:
    """Run ``cases`` (cases, or ``(target, index)`` to build) in one forked worker.

    Returns one outcome per case run; when the worker dies or sticks, the case it
    was on is reported as ``other`` and the list stops there.
    """
    root = tempfile.mkdtemp(prefix="tfprof-fuzz-")  # removed here even if the worker dies
    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the worker
        code = 0
        try:
            os.close(read_fd)
            _worker(write_fd, cases, corpus, config, root)
        except BaseException:  # never return into the parent's code
            code = 70
        os._exit(code)
    os.close(write_fd)
    outcomes: list[Outcome] = []
    stuck = False
    try:
        for line in _read_lines(read_fd, config.timeout + config.grace):
            if line is None:
                stuck = True
                break
            outcomes.append(Outcome(**json.loads(line)))
    finally:
        os.close(read_fd)
        how = _stop(pid)
        shutil.rmtree(root, ignore_errors=True)
    if len(outcomes) < len(cases):
        target, index = _spec(cases[len(outcomes)])
        what = "WorkerStuck" if stuck else "WorkerDied"
        outcomes.append(
            Outcome(
                target,
                index,
                "other",
                signature=f"{what} @ {target}",
                message=f"worker {how} while running this case",
            )
        )
    return outcomes


def run_cases(
    specs: Sequence[Case | tuple[str, int]], corpus: Corpus, config: RunConfig
) -> Iterator[Outcome]:
    """Outcomes of every case, batch after batch (a new worker per batch and after a
    dead or stuck worker)."""
    position = 0
    while position < len(specs):
        batch = specs[position : position + config.batch]
        outcomes = run_in_worker(batch, corpus, config)
        position += len(outcomes)
        yield from outcomes


def run_cli_subprocess(case: Case, timeout: float = 60.0) -> Outcome:
    """Run a CLI case as a real ``python -m tfprof_lite`` process (colour off)."""
    with tempfile.TemporaryDirectory(prefix="tfprof-fuzz-cli-") as tmp:
        directory = Path(tmp)
        write_files(case, directory)
        env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(_REPO)}
        command = [sys.executable, "-m", "tfprof_lite", *cli_argv(case, directory)]
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=timeout, env=env, check=False
            )
        except subprocess.TimeoutExpired:
            return Outcome(
                case.target,
                case.index,
                "other",
                signature="Hang @ cli-subprocess",
                message=f"no exit after {timeout:g} s",
            )
    return classify_cli(case, done.returncode, done.stderr)
