"""Device-string classification, as tfprof does it.

Device strings are lower-cased first. A *canonical* device (``.../device:cpu:0``,
``.../gpu:1``) carries the op's scheduling (CPU) time, run counts and memory;
a device containing ``stream:all`` carries accelerator time; every other device
(``stream:N``, ``memcpy``, ``xla_cpu``...) contributes no time.
"""

from __future__ import annotations

import re
from functools import lru_cache

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
#: The pseudo device of an XSpace's step markers (spans each step, carries no time).
STEPS_DEVICE = "/host:CPU/steps"

_CANONICAL_RE = re.compile(r".*/(device:gpu|gpu|device:cpu|cpu):\d+")
_GPU_INDEX_RE = re.compile(r"gpu:\d+")
_TRACER_RE = re.compile(r".*/(stream:[^/]*|memcpy|sync)")


def is_canonical_device(device: str) -> bool:
    """True when the lower-cased ``device`` is a canonical CPU/GPU device."""
    return _CANONICAL_RE.fullmatch(device) is not None


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
    return _TRACER_RE.fullmatch(device) is not None


def host_device_of(canonical_device: str) -> str:
    """The host device tfprof derives from a canonical device (``gpu:N`` -> ``cpu:0``)."""
    return _GPU_INDEX_RE.sub("cpu:0", canonical_device)
