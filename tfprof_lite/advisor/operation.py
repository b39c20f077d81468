"""OperationChecker: common operation misconfigurations, as TensorFlow 2.21 says them.

Contract (TF's ``operation_checker.h``), over every node of the profile (graph
nodes and nodes only seen in RunMetadata):

* some node *name* contains ``BatchNorm`` and no node has the op type exactly
  ``FusedBatchNorm`` → ``Maybe use faster FusedBatchNorm instead of BatchNorm``.
  The test is TF's, literally: ``FusedBatchNormV3`` (what
  ``tf.compat.v1.nn.fused_batch_norm`` creates today) is *not* ``FusedBatchNorm``,
  so a model already using the fused kernel inside a ``BatchNorm`` scope still
  gets this advice;
* some node has the string attribute ``data_format`` equal to ``NHWC`` and a
  canonical device containing ``gpu`` → ``Found operation using NHWC data_format
  on GPU. Maybe NCHW is faster.``

Reports come in that order; a profile with neither gets an entry with no reports.
"""

from __future__ import annotations

from tfprof_lite.advisor.base import Checker
from tfprof_lite.model.profile import ProfileModel

__all__ = ["FUSED_BN_ADVICE", "NCHW_ADVICE", "OperationChecker", "data_format"]

FUSED_BN_ADVICE = "Maybe use faster FusedBatchNorm instead of BatchNorm"
NCHW_ADVICE = "Found operation using NHWC data_format on GPU. Maybe NCHW is faster."


def data_format(model: ProfileModel, nid: int) -> str | None:
    """The node's ``data_format`` string attribute, or None.

    Profiles built from a GraphDef carry it decoded; profiles loaded from a
    ProfileProto only keep the serialized AttrValue, which is parsed here.
    """
    value = model.str_attrs[nid].get("data_format")
    if value is not None:
        return value
    raw = model.attrs[nid].get("data_format")
    if raw is None:
        return None
    from tfprof_lite.proto import messages as pb  # only a profile with graph attributes

    attr = pb.AttrValue()
    attr.ParseFromString(raw)
    if attr.WhichOneof("value") != "s":
        return None
    text: str = attr.s.decode("utf-8", "replace")
    return text


class OperationChecker(Checker):
    """Flags unfused batch norm and NHWC operations on GPU (TF's checker)."""

    name = "OperationChecker"

    def check(self, model: ProfileModel) -> list[str]:
        """The fused-batch-norm and NCHW advice lines that apply, in that order."""
        uses_batch_norm = any("BatchNorm" in name for name in model.names)
        uses_fused = any("FusedBatchNorm" in types for types in model.op_types)
        nhwc_on_gpu = any(
            "gpu" in model.canonical_device[nid] and data_format(model, nid) == "NHWC"
            for nid in range(len(model))
        )
        reports: list[str] = []
        if uses_batch_norm and not uses_fused:
            reports.append(FUSED_BN_ADVICE)
        if nhwc_on_gpu:
            reports.append(NCHW_ADVICE)
        return reports
