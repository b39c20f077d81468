"""Launch configurations (``kernel_details``) and the tensor-core rules."""

from __future__ import annotations

import pytest

from tfprof_lite.analysis.kernel_launch import (
    LaunchConfig,
    parse_details,
    split_label,
    tensor_core_eligible,
    uses_tensor_core,
)

FULL = "regs:136 static_shared:0 dynamic_shared:73728 grid:64,1,2 block:128,1,1 occ_pct:18.75"
CUTLASS = "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x64_16x6_nn_align4>(Params)"


def test_tf221_label() -> None:
    name, config = split_label(f"{CUTLASS} {FULL}")
    assert name == CUTLASS
    assert config == LaunchConfig(136, 0, 73728, "64,1,2", "128,1,1", 18.75)
    assert config.known


def test_older_tf2_label_and_annotation() -> None:
    label = "volta_sgemm_128x64_nn regs:126 shm:16384 grid:4,1,1 block:256,1,1@@a/mm:MatMul"
    name, config = split_label(label)
    assert name == "volta_sgemm_128x64_nn"
    assert config == LaunchConfig(126, 16384, None, "4,1,1", "256,1,1", None)


@pytest.mark.parametrize(
    "label",
    ["", "redzone_checker", CUTLASS, "a/mm:MatMul", "k foo:bar baz:1", "Eigen::internal::x y:z"],
)
def test_labels_without_details_are_all_name(label: str) -> None:
    name, config = split_label(label)
    assert name == label.strip() and not config.known


def test_missing_reordered_unknown_and_bad_fields() -> None:
    details = "block:32,1,1 regs:32 future_key:7 dynamic_shared:x grid:2,1 occ_pct=13.0"
    name, config = split_label(f"k {details}")
    assert name == "k"
    assert config == LaunchConfig(32, None, None, None, "32,1,1", None)
    assert parse_details("regs:1\nstatic_shared:2\nocc_pct:150 occ_pct:abc") == LaunchConfig(1, 2)
    assert parse_details("regs:-1 regs:1:2 grid:1,1,1,1 block:01,2,3") == LaunchConfig(
        block="1,2,3"
    )
    assert parse_details("occ_pct:100 regs:4 regs:5") == LaunchConfig(5, occupancy_pct=100.0)


def test_sort_key_orders_unknown_first() -> None:
    known, unknown = LaunchConfig(1, 0, 0, "1,1,1", "1,1,1", 50.0), LaunchConfig()
    assert sorted([known, unknown], key=LaunchConfig.sort_key) == [unknown, known]


@pytest.mark.parametrize(
    ("kernel", "uses"),
    [
        ("volta_h884gemm_64x64_ldg8_nn", True),
        ("turing_fp16_s1688cudnn_fp16_128x128_ldg8_relu_f2f_exp_small_nhwc_tn_v1", True),
        ("ampere_s16816gemm_fp16_128x64_ldg8_f2f_stages_64x4_nn", True),
        ("sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize32x32x8_stage3", True),
        (CUTLASS, True),
        ("nvjet_sm90_tss_128x128_64x6_2x1_v_bz_NTT", True),
        ("cutlass3x_sm90_wgmma_bf16_kernel", True),
        ("ampere_sgemm_32x32_sliced1x4_nn", False),
        ("gemm_fusion_dot_2", False),
        ("loop_convert_multiply_fusion_3", False),
        ("sm86_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_kernel", False),
    ],
)
def test_uses_tensor_core(kernel: str, uses: bool) -> None:
    assert uses_tensor_core(kernel) is uses


@pytest.mark.parametrize(
    ("op", "op_type", "eligible"),
    [
        ("dense/MatMul", "MatMul", True),
        ("dense/kernel_product", "MatMul", True),  # the type counts, not only the name
        ("MatMul", "", False),  # XProf: "/MatMul" must end the name
        ("model/conv1/Conv2D", "Conv2D", True),
        ("a/BatchMatMulV2", "BatchMatMulV2", True),
        ("a/fused", "_FusedMatMul", True),
        ("rnn/CudnnRNNV3", "CudnnRNNV3", True),
        ("x/XlaDotV2", "XlaDotV2", True),
        ("jit(train_step)/jvp(mlp)/dense0/dot_general", "", True),
        ("c", "conv_general_dilated", True),
        ("dense/Relu", "Relu", False),
        ("XlaModule", "", False),
        ("", "", False),
    ],
)
def test_tensor_core_eligible(op: str, op_type: str, eligible: bool) -> None:
    assert tensor_core_eligible(op, op_type, uses=False) is eligible
    assert tensor_core_eligible(op, op_type, uses=True)  # a tensor-core kernel proves it
