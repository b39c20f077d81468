"""XSpace bytes as flat columns: the schema's wire format, decoded natively or
by the pure walk (:mod:`~tfprof_lite.formats.xspace.wire.decode`)."""
