"""Device-string classification, as tfprof does it.

Device strings are lower-cased first. A *canonical* device (``.../device:cpu:0``,
``.../gpu:1``) carries the op's scheduling (CPU) time, run counts and memory;
a device containing ``stream:all`` carries accelerator time; every other device
(``stream:N``, ``memcpy``, ``xla_cpu``...) contributes no time.
"""

from __future__ import annotations

from functools import lru_cache

from tfprof_lite.base.device_names import CANONICAL, GPU_INDEX, TRACER

__all__ = [
    "DEVICE_ACCELERATOR",
    "DEVICE_CANONICAL",
    "DEVICE_OTHER",
    "STEPS_DEVICE",
    "classify_device",
    "host_device_of",
    "is_canonical_device",
    "is_tracer_device",
]

DEVICE_OTHER = 0
DEVICE_ACCELERATOR = 1
DEVICE_CANONICAL = 2
#: The pseudo device on which earlier versions recorded an XSpace's step markers
#: (one record spanning each step, no time). Steps now keep their marker as their
#: span (``StepExecs.span``) and write no record here; profiles saved by those
#: versions still hold such records, which the overview leaves out of its ops.
STEPS_DEVICE = "/host:CPU/steps"


def is_canonical_device(device: str) -> bool:
    """True when the lower-cased ``device`` is a canonical CPU/GPU device."""
    return CANONICAL.fullmatch(device) is not None


@lru_cache(maxsize=4096)
def classify_device(device: str) -> int:
    """Return DEVICE_CANONICAL, DEVICE_ACCELERATOR or DEVICE_OTHER for a lower-cased device."""
    if "stream:all" in device:
        return DEVICE_ACCELERATOR
    if is_canonical_device(device):
        return DEVICE_CANONICAL
    return DEVICE_OTHER


@lru_cache(maxsize=4096)
def is_tracer_device(device: str) -> bool:
    """True for a lower-cased GPU tracer device: ``.../stream:N``, ``.../stream:all``,
    ``.../stream:N<memcpyh2d>``, ``.../memcpy`` or ``.../sync`` (kernels and copies
    as the GPU tracer records them, not ops)."""
    return TRACER.fullmatch(device) is not None


def host_device_of(canonical_device: str) -> str:
    """The host device tfprof derives from a canonical device (``gpu:N`` -> ``cpu:0``)."""
    return GPU_INDEX.sub("cpu:0", canonical_device)
