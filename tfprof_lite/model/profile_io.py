"""ProfileProto <-> ProfileModel: the ``profile_<step>`` file format.

Writing is :mod:`tfprof_lite.model.profile_write` (:func:`encode`, :func:`encode_bytes`), reading
:mod:`tfprof_lite.model.profile_read` (:func:`decode`, :func:`load_bytes`); this module is the one
name both sides import.
"""

from __future__ import annotations

from tfprof_lite.model.profile_read import decode, load_bytes
from tfprof_lite.model.profile_write import encode, encode_bytes

__all__ = ["decode", "encode", "encode_bytes", "load_bytes"]
