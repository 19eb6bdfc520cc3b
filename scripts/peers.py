# Peers measured on the GPU machine beside tilec's kernels, same shapes as tests/gpu/*_gpu.cpp:
# torch.softmax, RMSNorm+SiLU in PyTorch eager and torch.compile, cuBLAS GEMM, scaled dot-product
# attention on its FlashAttention-2 and cuDNN backends (B8 H16 S4096 D128, plain and causal), and
# a device copy. Prints one line per case: name, median ms, GB/s (bytes read + written) or
# TFLOP/s (attention: 4 B H S^2 D, half of it causal, as tests/gpu/attention_gpu.cpp counts).
import torch
from triton.testing import do_bench

torch.manual_seed(0)
dev = "cuda"
rows = []


def gbs(nbytes, ms):
    return nbytes / ms / 1e6


M = 1 << 16
x = torch.randn(M, 1024, device=dev, dtype=torch.float16)
ms = do_bench(lambda: torch.softmax(x, dim=-1), warmup=50, rep=300, return_mode="median")
rows.append(("torch.softmax 65536x1024 fp16", ms, gbs(2 * x.numel() * 2, ms)))

x = torch.randn(M, 640, device=dev, dtype=torch.float16)
w = torch.randn(640, device=dev, dtype=torch.float16)


def rms_silu():
    xf = x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()
    return torch.nn.functional.silu(y).half()


ms = do_bench(rms_silu, warmup=50, rep=300, return_mode="median")
rows.append(("rmsnorm+silu eager 65536x640 fp16", ms, gbs(2 * x.numel() * 2, ms)))
compiled = torch.compile(rms_silu)
compiled()
ms = do_bench(compiled, warmup=50, rep=300, return_mode="median")
rows.append(("rmsnorm+silu torch.compile 65536x640 fp16", ms, gbs(2 * x.numel() * 2, ms)))

for dt, name in ((torch.float16, "fp16"), (torch.bfloat16, "bf16")):
    A = torch.randn(4096, 4096, device=dev, dtype=dt)
    B = torch.randn(4096, 4096, device=dev, dtype=dt)
    ms = do_bench(lambda: A @ B, warmup=50, rep=300, return_mode="median")
    rows.append((f"cuBLAS {name} gemm 4096^3 (TFLOP/s)", ms, 2 * 4096**3 / ms / 1e9))

from torch.nn.attention import SDPBackend, sdpa_kernel

Bq, Hq, Sq, Dq = 8, 16, 4096, 128
q, k, v = (torch.randn(Bq, Hq, Sq, Dq, device=dev, dtype=torch.float16) for _ in range(3))
for backend, label in ((SDPBackend.FLASH_ATTENTION, "SDPA flash (FA2)"),
                       (SDPBackend.CUDNN_ATTENTION, "SDPA cuDNN")):
    for causal in (False, True):
        try:
            with sdpa_kernel(backend):
                f = lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
                f()
                ms = do_bench(f, warmup=20, rep=200, return_mode="median")
        except RuntimeError as e:  # a backend this build lacks
            print(f"PEER {label} unavailable: {e}".splitlines()[0])
            continue
        flop = 4 * Bq * Hq * Sq * Sq * Dq * (0.5 if causal else 1.0)
        tag = " causal" if causal else ""
        rows.append((f"{label}{tag} B8 H16 S4096 D128 (TFLOP/s)", ms, flop / ms / 1e9))

a = torch.empty(1 << 30, device=dev, dtype=torch.uint8)
b = torch.empty_like(a)
ms = do_bench(lambda: b.copy_(a), warmup=20, rep=200, return_mode="median")
rows.append(("d2d copy 1 GiB", ms, gbs(2 * a.numel(), ms)))
for name, ms, g in rows:
    unit = "TFLOP/s" if "TFLOP" in name else "GB/s"
    print(f"PEER {name:45s} {ms:9.4f} ms {g:9.1f} {unit}")
