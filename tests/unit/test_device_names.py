"""The device-string grammar (tfprof_lite.base.device_names) and that it is the only one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tfprof_lite.base import device_names as dn

PACKAGE = Path(__file__).resolve().parents[2] / "tfprof_lite"


@pytest.mark.parametrize(
    ("device", "parts"),
    [
        ("/job:worker/replica:0/task:3/device:GPU:0", ("worker", 0, 3)),
        ("/job:localhost/replica:0/task:0", ("localhost", 0, 0)),
        ("/JOB:Ps/REPLICA:1/TASK:2/cpu:0", ("Ps", 1, 2)),
        ("/job:w/replica:0/task:1x/device:CPU:0", None),  # the task number ends at / or the end
        ("/device:GPU:0/stream:7", None),
        ("", None),
    ],
)
def test_task_parts(device: str, parts: tuple[str, int, int] | None) -> None:
    assert dn.task_parts(device) == parts
    text = dn.task_text(device)
    assert (text is None) == (parts is None)
    if text is not None:
        assert device.startswith(text) and text.count("/") == 3


@pytest.mark.parametrize(
    ("device", "parts", "ordinal"),
    [
        ("/device:GPU:0/stream:7", ("/device:GPU:0", "stream:7"), 0),
        ("/job:a/replica:0/task:0/device:gpu:3/stream:all",
         ("/job:a/replica:0/task:0/device:gpu:3", "stream:all"), 3),
        ("/gpu:1/stream:12<MemcpyHtoD>", ("/gpu:1", "stream:12<MemcpyHtoD>"), 1),
        ("/device:GPU:2/memcpy", ("/device:GPU:2", "memcpy"), 2),
        ("/device:GPU:2/sync", ("/device:GPU:2", "sync"), 2),
        ("/job:a/replica:0/task:0/device:CPU:0", None, None),
    ],
)  # fmt: skip
def test_tracer_parts_and_gpu_ordinal(
    device: str, parts: tuple[str, str] | None, ordinal: int | None
) -> None:
    assert dn.tracer_parts(device) == parts
    assert dn.gpu_ordinal(device) == ordinal
    assert (dn.TRACER.fullmatch(device.lower()) is not None) == (parts is not None)


def test_tfprof_rules_on_lowered_devices() -> None:
    assert dn.CANONICAL.fullmatch("/job:a/replica:0/task:0/device:gpu:0")
    assert dn.CANONICAL.fullmatch("/gpu:0")
    assert not dn.CANONICAL.fullmatch("/job:a/replica:0/task:0/device:gpu:0/stream:all")
    assert dn.GPU_INDEX.sub("cpu:0", "/job:a/replica:0/task:0/device:gpu:1") == (
        "/job:a/replica:0/task:0/device:cpu:0"
    )
    found = dn.STREAM.fullmatch("stream:12<MemcpyDtoH>")
    assert found is not None and found.groups() == ("12", "<MemcpyDtoH>")
    assert dn.GPU_TRACER.match("/device:gpu:4/stream:1") is not None


_GRAMMAR = re.compile(r"re\.compile\(r?\"[^\"]*(?:/job:|stream:\[|gpu:\\\\d|gpu:\(\\\\d)")


def test_no_other_module_parses_device_strings() -> None:
    """Every device pattern lives in base/device_names.py."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "device_names.py":
            continue
        text = path.read_text(encoding="utf-8")
        offenders += [f"{path.relative_to(PACKAGE)}: {m.group(0)}" for m in _GRAMMAR.finditer(text)]
    assert offenders == []
    # the check can fail: the grammar's own module would be an offender
    assert _GRAMMAR.search((PACKAGE / "base" / "device_names.py").read_text(encoding="utf-8"))
