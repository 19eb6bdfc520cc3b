// The one description of a GPU target: which instructions it has and its hardware limits. The
// driver builds it once from --arch; every later stage asks it instead of comparing arch names
// or writing hardware numbers of its own.
#pragma once

#include "support/DType.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tilec::target {

/// Limits every supported target shares, for the stages that run before a target is chosen
/// (sema checks them for `tilec check` too).
inline constexpr int kWarpSize = 32;
inline constexpr int kMaxThreadsPerBlock = 1024;
inline constexpr int64_t kMaxGridExtent[3] = {2147483647, 65535, 65535};
/// Shared memory is 32 banks of 4 bytes; one warp's access takes a pass (wavefront) per set of
/// words that share no bank.
inline constexpr int kSharedMemoryBanks = 32;

/// The instruction set a target's code is written in, and the toolchain that finishes it.
enum class Isa {
  Ptx,    // NVIDIA: PTX from LLVM's NVPTX backend, a cubin from ptxas, the CUDA Driver API
  Amdgcn, // AMD: an object from LLVM's AMDGPU backend, a code object from ld.lld, HIP
};

/// The tensor-core (matrix-core) instruction families.
enum class MmaFamily {
  MmaSync, // mma.sync.aligned (sm_80+): one warp, operands in registers
  Wgmma,   // wgmma.mma_async (sm_90a): one warpgroup, operands from shared memory descriptors
  Mfma,    // v_mfma_* (gfx90a, gfx942): one wavefront of 64 lanes, operands in registers
};

/// One shape of an MMA family for one operand type (fp32 accumulation).
struct MmaShape {
  int m = 0, n = 0, k = 0;
  DType input = DType::Float16;
  friend bool operator==(const MmaShape &, const MmaShape &) = default;
};

struct TargetInfo {
  std::string arch; // as --arch and ptxas (or LLVM's AMDGPU backend) spell it: "sm_90a", "gfx942"
  Isa isa = Isa::Ptx;
  int smVersion = 0; // 80, 86, 89, 90; 0 on AMD
  /// The `a` suffix: instructions that only this exact GPU generation has (wgmma, setmaxnreg).
  bool archSpecific = false;

  // ---- Instructions ---------------------------------------------------------------------------
  bool hasCpAsync = false;         // cp.async global -> shared (sm_80+)
  bool hasWgmma = false;           // wgmma.mma_async (sm_90a)
  bool hasTma = false;             // cp.async.bulk.tensor and mbarrier tx counts (sm_90+)
  bool hasSetmaxnreg = false;      // setmaxnreg (sm_90a)
  bool hasFp8Mma = false;          // tensor-core fp8 (e4m3/e5m2) inputs (sm_89+)
  bool hasFp8Convert = false;      // cvt between fp8 pairs and f16x2 / f32 pairs (sm_89+)
  bool hasAsyncProxyFence = false; // fence.proxy.async: generic writes seen by wgmma/TMA (sm_90+)
  /// griddepcontrol (sm_90+): a kernel launched with programmatic stream serialization starts
  /// before the kernel ahead of it in the stream has finished, and waits for it in code.
  bool hasGridDependencyControl = false;
  /// bar.sync with an id and a thread count: barriers of part of a block (NVIDIA). AMD has
  /// s_barrier only, for the whole workgroup.
  bool hasNamedBarriers = false;
  /// vprintf from device code (NVIDIA; AMD's printf goes through hostcall buffers: not yet).
  bool hasDevicePrintf = false;

  // ---- Limits ---------------------------------------------------------------------------------
  int warpSize = kWarpSize;
  int maxThreadsPerBlock = kMaxThreadsPerBlock;
  int maxThreadsPerSM = 2048;
  int registersPerThread = 255; // 32-bit registers one thread may name
  int registersPerSM = 65536;
  /// Shared memory one block gets without opting in, and at most after cuFuncSetAttribute.
  int64_t sharedPerBlockDefault = 48 * 1024;
  int64_t sharedPerBlockOptin = 0;
  int64_t sharedPerSM = 0;
  /// Where shared buffers start: the 128-byte swizzle pattern repeats every 1024 bytes, and
  /// wgmma descriptors and TMA destinations assume the pattern starts at the buffer.
  int64_t sharedBufferAlign = 1024;

  /// PTX ISA version times ten: what the generated PTX declares (`.version 8.5`).
  int ptxVersion = 85;

  /// The MMA shapes of each family this target has (empty when it lacks the family).
  std::vector<MmaShape> mmaSyncShapes;
  std::vector<MmaShape> wgmmaShapes;
  std::vector<MmaShape> mfmaShapes;

  const std::vector<MmaShape> &shapes(MmaFamily f) const {
    switch (f) {
    case MmaFamily::Wgmma:
      return wgmmaShapes;
    case MmaFamily::Mfma:
      return mfmaShapes;
    default:
      return mmaSyncShapes;
    }
  }

  bool isAmd() const { return isa == Isa::Amdgcn; }
  /// The file extension of the machine code: "cubin" or "hsaco".
  std::string_view binaryExtension() const { return isAmd() ? "hsaco" : "cubin"; }
};

/// The architectures --arch accepts, in a stable order.
const std::vector<std::string> &supportedArchs();

/// The description of `arch`, or nullopt when it is not one of supportedArchs().
std::optional<TargetInfo> targetInfo(std::string_view arch);

/// The target `tilec compile` builds for when --arch is not given (sm_90a).
const TargetInfo &defaultTarget();

} // namespace tilec::target
