"""The base layer: units and number formats, the metric table, bounded file reads,
atomic writes.

Every other layer may import it; it imports nothing of the package but
:mod:`tfprof_lite.errors`.
"""
