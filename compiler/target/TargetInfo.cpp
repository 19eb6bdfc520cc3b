#include "target/TargetInfo.h"

#include <algorithm>

namespace tilec::target {

namespace {

// Sources: CUDA C++ Programming Guide, "Compute Capabilities" (technical specifications per
// compute capability), and the PTX ISA's target-ISA notes for each instruction.
TargetInfo make(std::string arch, int sm, bool archSpecific) {
  TargetInfo t;
  t.arch = std::move(arch);
  t.smVersion = sm;
  t.archSpecific = archSpecific;
  t.hasCpAsync = sm >= 80;
  t.hasTma = sm >= 90;
  t.hasAsyncProxyFence = sm >= 90;
  t.hasGridDependencyControl = sm >= 90;
  t.hasWgmma = sm == 90 && archSpecific;
  t.hasSetmaxnreg = sm == 90 && archSpecific;
  t.hasFp8Mma = sm >= 89;
  // cvt.rn.satfinite.{e4m3x2,e5m2x2}.{f32,f16x2} and cvt.rn.f16x2.{e4m3x2,e5m2x2}: PTX ISA 7.8,
  // sm_89.
  t.hasFp8Convert = sm >= 89;
  t.hasNamedBarriers = true;
  t.hasDevicePrintf = true;
  switch (sm) {
  case 80:
    t.sharedPerBlockOptin = 163 * 1024;
    t.sharedPerSM = 164 * 1024;
    t.maxThreadsPerSM = 2048;
    break;
  case 86:
  case 89:
    t.sharedPerBlockOptin = 99 * 1024;
    t.sharedPerSM = 100 * 1024;
    t.maxThreadsPerSM = 1536;
    break;
  default: // 90
    t.sharedPerBlockOptin = 227 * 1024;
    t.sharedPerSM = 228 * 1024;
    t.maxThreadsPerSM = 2048;
    break;
  }
  for (DType in : {DType::Float16, DType::BFloat16})
    t.mmaSyncShapes.push_back({16, 8, 16, in});
  if (t.hasFp8Mma)
    for (DType in : {DType::Float8E4M3, DType::Float8E5M2})
      t.mmaSyncShapes.push_back({16, 8, 32, in});
  if (t.hasWgmma) {
    // m64nNk16 for 16-bit inputs, m64nNk32 for fp8; N = 8, 16, ..., 256.
    for (DType in : {DType::Float16, DType::BFloat16, DType::Float8E4M3, DType::Float8E5M2})
      for (int n = 8; n <= 256; n += 8)
        t.wgmmaShapes.push_back({64, n, dtypeBits(in) == 8 ? 32 : 16, in});
  }
  return t;
}

// Sources: LLVM's AMDGPUUsage ("Processors": gfx90a and gfx942 are wave64 GCN processors with
// unified VGPR/AGPR files), AMD's CDNA2 and CDNA3 ISA references (64 KiB of LDS per workgroup,
// 512 VGPRs + AGPRs per lane, the v_mfma_f32_{32x32x8,16x16x16}_{f16,bf16} forms both have).
TargetInfo makeAmd(std::string arch) {
  TargetInfo t;
  t.arch = std::move(arch);
  t.isa = Isa::Amdgcn;
  t.warpSize = 64;
  t.maxThreadsPerBlock = 1024;
  t.maxThreadsPerSM = 2048;   // 4 SIMDs x 8 waves x 64 lanes per CU
  t.registersPerThread = 512; // 256 arch VGPRs + 256 AGPRs
  t.registersPerSM = 4 * 512 * 64;
  t.sharedPerBlockDefault = 64 * 1024;
  t.sharedPerBlockOptin = 64 * 1024;
  t.sharedPerSM = 64 * 1024;
  // LDS has no swizzle period that buffers must start on; 16 bytes keeps b128 accesses aligned.
  t.sharedBufferAlign = 16;
  t.ptxVersion = 0;
  for (DType in : {DType::Float16, DType::BFloat16}) {
    t.mfmaShapes.push_back({32, 32, 8, in});
    t.mfmaShapes.push_back({16, 16, 16, in});
  }
  return t;
}

const std::vector<TargetInfo> &targets() {
  static const std::vector<TargetInfo> all = {make("sm_80", 80, false), make("sm_86", 86, false),
                                              make("sm_89", 89, false), make("sm_90", 90, false),
                                              make("sm_90a", 90, true), makeAmd("gfx90a"),
                                              makeAmd("gfx942")};
  return all;
}

} // namespace

const std::vector<std::string> &supportedArchs() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const TargetInfo &t : targets())
      n.push_back(t.arch);
    return n;
  }();
  return names;
}

std::optional<TargetInfo> targetInfo(std::string_view arch) {
  const auto &all = targets();
  auto it =
      std::find_if(all.begin(), all.end(), [&](const TargetInfo &t) { return t.arch == arch; });
  if (it == all.end())
    return std::nullopt;
  return *it;
}

const TargetInfo &defaultTarget() {
  static const TargetInfo t = *targetInfo("sm_90a");
  return t;
}

} // namespace tilec::target
