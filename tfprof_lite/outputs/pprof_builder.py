"""The tables every pprof profile keeps: strings, functions and locations.

Contract of :class:`PprofBuilder`: string ids are handed out in first-use order
(id 0 is the empty string); functions and locations get ids 1, 2, ... in
creation order under a caller-chosen key, and an existing key returns the id it
already has. :meth:`PprofBuilder.finish` writes the three tables into a
``perftools.profiles.Profile`` in creation order, or sorted by key (tfprof keeps
them in ``std::map``\\ s). :func:`gzip_profile` compresses a profile as
TensorFlow does.
"""

from __future__ import annotations

import zlib
from typing import Any

from tfprof_lite.proto import messages as pb

__all__ = ["Key", "PprofBuilder", "function_name", "gzip_profile"]

#: A function or location key (tuples sort like tfprof's ``std::map`` keys).
Key = tuple[Any, ...]


def function_name(file: str, function: str) -> str:
    """``basename:function``, the file's base name without its extension."""
    base = file.rsplit("/", 1)[-1]
    return f"{base.rsplit('.', 1)[0]}:{function}"


def gzip_profile(profile: Any) -> bytes:
    """gzip bytes of a Profile message, compressed as TensorFlow compresses them."""
    data: bytes = profile.SerializeToString()
    gz = zlib.compressobj(-1, zlib.DEFLATED, 31)
    return gz.compress(data) + gz.flush()


class PprofBuilder:
    """String, function and location tables of one pprof profile."""

    def __init__(self) -> None:
        self.strings: dict[str, int] = {"": 0}
        self.functions: dict[Key, Any] = {}
        self.locations: dict[Key, Any] = {}

    def sid(self, text: str) -> int:
        """The string-table id of ``text``, adding it at the end if new."""
        return self.strings.setdefault(text, len(self.strings))

    def function(self, key: Key, name: str, filename: str, start_line: int = 0) -> int:
        """The id of the function under ``key``, created (name, then file) if new."""
        found = self.functions.get(key)
        if found is not None:
            return int(found.id)
        msg = pb.PprofFunction(id=len(self.functions) + 1)
        self.functions[key] = msg
        msg.name = self.sid(name)
        msg.filename = self.sid(filename)
        msg.start_line = start_line
        return int(msg.id)

    def location_id(self, key: Key) -> int | None:
        """The id of the location under ``key``, or None if there is none yet."""
        found = self.locations.get(key)
        return None if found is None else int(found.id)

    def location(self, key: Key, function_id: int, line: int) -> int:
        """The id of the location under ``key``, created with one line if new."""
        found = self.location_id(key)
        if found is not None:
            return found
        msg = pb.PprofLocation(id=len(self.locations) + 1)
        self.locations[key] = msg
        msg.line.add(function_id=function_id, line=line)
        return int(msg.id)

    def finish(self, profile: Any, *, by_key: bool) -> Any:
        """Writes the tables into ``profile`` (sorted by key if ``by_key``); returns it."""
        profile.string_table.extend(self.strings)
        tables = ((self.functions, profile.function), (self.locations, profile.location))
        for table, field in tables:
            keys = sorted(table) if by_key else list(table)
            field.extend(table[key] for key in keys)
        return profile
