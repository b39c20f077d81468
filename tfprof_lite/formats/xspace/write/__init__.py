"""A profile as XSpace bytes that XProf and TensorBoard's Profile tab read
(:mod:`~tfprof_lite.formats.xspace.write.export`)."""
