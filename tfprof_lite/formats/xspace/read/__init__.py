"""An XSpace's columns into the profile model (:mod:`~tfprof_lite.formats.xspace.read.load`
reads files, run folders and logdirs; :mod:`~tfprof_lite.formats.xspace.read.conversion`
plans and adds the steps)."""
