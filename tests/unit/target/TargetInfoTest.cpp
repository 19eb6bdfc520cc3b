#include "target/TargetInfo.h"

#include <doctest/doctest.h>

#include <algorithm>

using namespace tilec;
using target::MmaShape;
using target::TargetInfo;

namespace {

bool has(const std::vector<MmaShape> &shapes, MmaShape s) {
  return std::find(shapes.begin(), shapes.end(), s) != shapes.end();
}

} // namespace

TEST_CASE("every supported arch has a description under its own name") {
  const auto &archs = target::supportedArchs();
  CHECK(archs ==
        std::vector<std::string>{"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "gfx90a", "gfx942"});
  for (const std::string &a : archs) {
    CAPTURE(a);
    auto t = target::targetInfo(a);
    REQUIRE(t);
    CHECK(t->arch == a);
    CHECK(t->isAmd() == (a.rfind("gfx", 0) == 0));
  }
}

TEST_CASE("every NVIDIA arch: warps of 32, PTX, mma.sync") {
  for (const std::string &a : target::supportedArchs()) {
    if (a.rfind("sm_", 0) != 0)
      continue;
    CAPTURE(a);
    auto t = target::targetInfo(a);
    REQUIRE(t);
    CHECK(t->arch == a);
    CHECK(t->warpSize == 32);
    CHECK(t->maxThreadsPerBlock == 1024);
    CHECK(t->registersPerThread == 255);
    CHECK(t->registersPerSM == 65536);
    CHECK(t->sharedPerBlockDefault == 48 * 1024);
    CHECK(t->sharedPerBlockOptin <= t->sharedPerSM);
    CHECK(t->sharedBufferAlign == 1024);
    CHECK(t->ptxVersion == 85);
    CHECK(t->hasCpAsync);
    CHECK(t->isa == target::Isa::Ptx);
    CHECK(t->binaryExtension() == "cubin");
    CHECK(t->hasNamedBarriers);
    CHECK(t->mfmaShapes.empty());
    CHECK(has(t->mmaSyncShapes, {16, 8, 16, DType::Float16}));
    CHECK(has(t->mmaSyncShapes, {16, 8, 16, DType::BFloat16}));
  }
}

TEST_CASE("unsupported arch names have no description") {
  for (const char *a : {"sm_75", "sm_90A", "sm_100a", "", "gfx908", "gfx1100", "GFX942", "sm_90a "})
    CHECK_FALSE(target::targetInfo(a));
}

TEST_CASE("sm_80: Ampere, mma.sync only") {
  TargetInfo t = *target::targetInfo("sm_80");
  CHECK(t.smVersion == 80);
  CHECK_FALSE(t.archSpecific);
  CHECK_FALSE(t.hasWgmma);
  CHECK_FALSE(t.hasTma);
  CHECK_FALSE(t.hasSetmaxnreg);
  CHECK_FALSE(t.hasFp8Mma);
  CHECK_FALSE(t.hasFp8Convert);
  CHECK_FALSE(t.hasAsyncProxyFence);
  CHECK(t.sharedPerBlockOptin == 166912);
  CHECK(t.maxThreadsPerSM == 2048);
  CHECK(t.wgmmaShapes.empty());
  CHECK(t.shapes(target::MmaFamily::Wgmma).empty());
}

TEST_CASE("sm_86 and sm_89: 99 KiB of shared memory per block; fp8 mma from sm_89") {
  TargetInfo a = *target::targetInfo("sm_86"), b = *target::targetInfo("sm_89");
  CHECK(a.sharedPerBlockOptin == 101376);
  CHECK(b.sharedPerBlockOptin == 101376);
  CHECK(a.maxThreadsPerSM == 1536);
  CHECK_FALSE(a.hasFp8Mma);
  CHECK(b.hasFp8Mma);
  CHECK_FALSE(a.hasFp8Convert);
  CHECK(b.hasFp8Convert);
  CHECK(has(b.mmaSyncShapes, {16, 8, 32, DType::Float8E4M3}));
  CHECK_FALSE(has(a.mmaSyncShapes, {16, 8, 32, DType::Float8E4M3}));
}

TEST_CASE("sm_90 has TMA and the async proxy but not the sm_90a-only instructions") {
  TargetInfo t = *target::targetInfo("sm_90");
  CHECK(t.smVersion == 90);
  CHECK_FALSE(t.archSpecific);
  CHECK(t.hasTma);
  CHECK(t.hasAsyncProxyFence);
  CHECK_FALSE(t.hasWgmma);
  CHECK_FALSE(t.hasSetmaxnreg);
  CHECK(t.sharedPerBlockOptin == 232448);
}

TEST_CASE("sm_90a: wgmma shapes m64nNk16 (N a multiple of 8 up to 256) and fp8 k32") {
  TargetInfo t = *target::targetInfo("sm_90a");
  CHECK(t.archSpecific);
  CHECK(t.hasWgmma);
  CHECK(t.hasSetmaxnreg);
  CHECK(t.hasTma);
  CHECK(t.hasFp8Mma);
  CHECK(t.hasFp8Convert);
  CHECK(t.sharedPerBlockOptin == 232448);
  for (int n = 8; n <= 256; n += 8) {
    CHECK(has(t.wgmmaShapes, {64, n, 16, DType::Float16}));
    CHECK(has(t.wgmmaShapes, {64, n, 16, DType::BFloat16}));
    CHECK(has(t.wgmmaShapes, {64, n, 32, DType::Float8E4M3}));
  }
  CHECK_FALSE(has(t.wgmmaShapes, {64, 12, 16, DType::Float16}));
  CHECK_FALSE(has(t.wgmmaShapes, {64, 264, 16, DType::Float16}));
  CHECK(target::defaultTarget().arch == "sm_90a");
}

TEST_CASE("gfx90a and gfx942: wave64, 64 KiB of LDS, MFMA 32x32x8 and 16x16x16 (f16, bf16)") {
  for (const char *a : {"gfx90a", "gfx942"}) {
    CAPTURE(a);
    TargetInfo t = *target::targetInfo(a);
    CHECK(t.isa == target::Isa::Amdgcn);
    CHECK(t.binaryExtension() == "hsaco");
    CHECK(t.warpSize == 64);
    CHECK(t.maxThreadsPerBlock == 1024);
    CHECK(t.sharedPerBlockDefault == 65536);
    CHECK(t.sharedPerBlockOptin == 65536);
    CHECK(t.registersPerThread == 512);
    // None of NVIDIA's asynchronous copies, barriers of part of a block or tensor-core forms.
    CHECK_FALSE(t.hasCpAsync);
    CHECK_FALSE(t.hasTma);
    CHECK_FALSE(t.hasWgmma);
    CHECK_FALSE(t.hasNamedBarriers);
    CHECK_FALSE(t.hasDevicePrintf);
    CHECK(t.mmaSyncShapes.empty());
    for (DType in : {DType::Float16, DType::BFloat16}) {
      CHECK(has(t.shapes(target::MmaFamily::Mfma), {32, 32, 8, in}));
      CHECK(has(t.shapes(target::MmaFamily::Mfma), {16, 16, 16, in}));
    }
  }
}
