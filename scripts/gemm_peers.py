"""GEMM peers of the benchmark (scripts/bench-gemm.sh, scripts/bench_gemm.py): cuBLAS through
torch.matmul (torch._scaled_mm for fp8 e4m3) and the Triton tutorial matmul autotuned over the
usual Hopper configurations, on operands of the same dtype and storage order as a tilec case.

Timing is gputest::medianMs of tests/gpu/gpu_common.h in Python: `warmup` untimed calls, a
synchronize, then `reps` calls each between two CUDA events on the current stream, each waited
for; the median. No L2 flush between calls, for the peers as for tilec.

    python3 scripts/gemm_peers.py fp16 nn 4096 4096 4096     # one shape by hand
"""
import argparse
import sys

import torch

import bench_common

try:
    import triton
    import triton.language as tl
except ImportError as e:  # the cuBLAS peer still runs
    triton = None
    TRITON_ERROR = str(e)

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp8e4m3": torch.float8_e4m3fn}
# The output dtype of each input dtype (fp8 as the tilec fp8 case writes it).
OUT_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp8e4m3": torch.bfloat16}


def median_ms(fn, warmup, reps, batch=1):
    return bench_common.median_ms(torch, fn, warmup, reps, batch)


def operands(dtype, layout, M, N, K, seed=1):
    """A as an (M, K) view and B as a (K, N) view, stored as the layout says: layout[0] 't' means
    A is stored (K, M), layout[1] 't' means B is stored (N, K). Values uniform in [-1, 1)."""
    g = torch.Generator(device="cuda").manual_seed(seed)

    def uniform(rows, cols):
        x = torch.rand(rows, cols, device="cuda", generator=g) * 2 - 1
        return x.to(DTYPES[dtype])

    a = uniform(K, M).t() if layout[0] == "t" else uniform(M, K)
    b = uniform(N, K).t() if layout[1] == "t" else uniform(K, N)
    return a, b


def cublas_fn(dtype, a, b):
    """The cuBLAS call on (M, K) and (K, N) views: torch.matmul into a preallocated output, or
    torch._scaled_mm with unit scales (A row-major, B column-major) for fp8."""
    if dtype == "fp8e4m3":
        one = torch.ones((), device="cuda", dtype=torch.float32)
        return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=OUT_DTYPES[dtype])
    c = torch.empty(a.shape[0], b.shape[1], device="cuda", dtype=OUT_DTYPES[dtype])
    return lambda: torch.matmul(a, b, out=c)


if triton is not None:

    def _config(bm, bn, bk, stages, warps):
        return triton.Config({"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk,
                              "GROUP_SIZE_M": 8}, num_stages=stages, num_warps=warps)

    # The tutorial's configurations that suit Hopper, and the tile shapes CUTLASS and cuBLAS pick
    # there (128x256 and 256x128 with two consumer warpgroups, 128-wide K for fp8).
    HOPPER_CONFIGS = [
        _config(128, 256, 64, 3, 8),
        _config(128, 256, 64, 4, 8),
        _config(256, 128, 64, 3, 8),
        _config(256, 128, 64, 4, 8),
        _config(128, 128, 64, 4, 4),
        _config(128, 128, 64, 3, 8),
        _config(64, 256, 64, 4, 4),
        _config(128, 64, 64, 4, 4),
        _config(128, 128, 128, 3, 8),
        _config(128, 256, 128, 3, 8),
    ]

    @triton.autotune(configs=HOPPER_CONFIGS,
                     key=["M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn"])
    @triton.jit
    def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                      stride_cm, stride_cn, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                      BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr):
        """C = A @ B, the Triton tutorial's (03-matrix-multiplication) grouped-order kernel."""
        pid = tl.program_id(axis=0)
        num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
        num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
        num_pid_in_group = GROUP_SIZE_M * num_pid_n
        group_id = pid // num_pid_in_group
        first_pid_m = group_id * GROUP_SIZE_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
        pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
        pid_n = (pid % num_pid_in_group) // group_size_m

        offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
        offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
        offs_k = tl.arange(0, BLOCK_SIZE_K)
        a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
        b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
        accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
            a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
            accumulator = tl.dot(a, b, accumulator)
            a_ptrs += BLOCK_SIZE_K * stride_ak
            b_ptrs += BLOCK_SIZE_K * stride_bk
        c = accumulator.to(c_ptr.dtype.element_ty)

        offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
        offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
        c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
        c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
        tl.store(c_ptrs, c, mask=c_mask)


def triton_fn(dtype, a, b):
    """The autotuned Triton matmul on (M, K) and (K, N) views (any strides) into a preallocated
    output; the first call autotunes (once per shape and storage order in a process)."""
    if triton is None:
        raise RuntimeError(f"triton unavailable: {TRITON_ERROR}")
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty(M, N, device="cuda", dtype=OUT_DTYPES[dtype])

    def grid(meta):
        return (triton.cdiv(M, meta["BLOCK_SIZE_M"]) * triton.cdiv(N, meta["BLOCK_SIZE_N"]),)

    def run():
        matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                            c.stride(0), c.stride(1))
        return c

    return run


def triton_config(a, b):
    """The configuration the autotuner chose for these operands, as BMxBNxBK sS wW."""
    if triton is None or not getattr(matmul_kernel, "best_config", None):
        return ""
    cfg = matmul_kernel.best_config
    kw = cfg.kwargs
    return (f"{kw['BLOCK_SIZE_M']}x{kw['BLOCK_SIZE_N']}x{kw['BLOCK_SIZE_K']} "
            f"s{cfg.num_stages} w{cfg.num_warps}")


def agrees(got, want, dtype):
    """Whether a peer's output is close to cuBLAS's (a sanity check of the Triton kernel)."""
    tol = 2e-2 if dtype != "fp16" else 5e-3
    err = (got.float() - want.float()).norm() / want.float().norm().clamp_min(1e-30)
    return bool(err < tol), float(err)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dtype", choices=sorted(DTYPES))
    ap.add_argument("layout", choices=["nn", "nt", "tn", "tt"])
    ap.add_argument("M", type=int)
    ap.add_argument("N", type=int)
    ap.add_argument("K", type=int)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--reps", type=int, default=50)
    args = ap.parse_args()
    a, b = operands(args.dtype, args.layout, args.M, args.N, args.K)
    flop = 2.0 * args.M * args.N * args.K
    for name, make in (("cublas", cublas_fn), ("triton", triton_fn)):
        fn = make(args.dtype, a, b)
        fn()
        ms = median_ms(fn, args.warmup, args.reps)
        print(f"PEER {name} {args.dtype} {args.layout} M={args.M} N={args.N} K={args.K} "
              f"ms={ms:.4f} tflops={flop / ms / 1e9:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
