// The interpreter's own semantics, from thread IR text: warps that run apart and meet at
// barriers, mbarrier phases, 8-bit floats, and what it reports when a program goes wrong
// (deadlocks, a store over an mbarrier).
#include "threadir/Interpreter.h"
#include "threadir/ThreadIRParser.h"

#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

using namespace tilec;

namespace {

/// Runs kernel 0 of thread IR `text` with 64 threads' worth of int32 output `out` (filled with
/// -1 first) and returns the interpreter's error, if any.
std::optional<std::string> runText(const std::string &text, std::vector<int32_t> &out,
                                   bool interleave = false) {
  SourceManager sm;
  DiagnosticEngine diags(sm);
  auto m = thir::parseThreadIR(sm, sm.addBuffer("t.thir", text), diags);
  REQUIRE_MESSAGE(m, diags.renderAll());
  out.assign(64, -1);
  std::vector<uint8_t> bytes(out.size() * 4);
  std::memcpy(bytes.data(), out.data(), bytes.size());
  thir::InterpreterLaunch l;
  l.tensors = {&bytes};
  l.scalars = {0.0};
  l.interleaveStatements = interleave;
  auto error = thir::interpret(m->kernels.at(0), l);
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return error;
}

const char *kExchange = R"(module t
kernel k(%out: tensor<int32, align 4>) threads=64 grid=(none, none, none) dynamic_smem=256 {
  smem[(threadIdx.x * 4:int32); 0, 256] = threadIdx.x
  BARRIER
  store %out[cast<int64>(threadIdx.x)] = smem<int32>[(((threadIdx.x + 32:int32) % 64:int32) * 4:int32); 0, 256], align 4
}
)";

std::string withBarrier(const char *barrier) {
  std::string s = kExchange;
  s.replace(s.find("BARRIER"), 7, barrier);
  return s;
}

} // namespace

TEST_CASE("warps exchange values through shared memory across a barrier, in either "
          "interleaving") {
  for (bool interleave : {false, true}) {
    CAPTURE(interleave);
    std::vector<int32_t> out;
    auto error = runText(withBarrier("barrier"), out, interleave);
    REQUIRE_MESSAGE(!error, *error);
    for (int t = 0; t < 64; ++t)
      CHECK(out[t] == (t + 32) % 64);
  }
}

TEST_CASE("without the barrier, the first warp reads the other's slots before they are written") {
  std::vector<int32_t> out;
  auto error = runText(withBarrier(""), out);
  REQUIRE_MESSAGE(!error, *error);
  int32_t poison;
  std::memset(&poison, 0xCD, 4);
  CHECK(out[0] == poison); // warp 0 ran to its end before warp 1 began
  CHECK(out[32] == 0);     // warp 1 then saw warp 0's
}

TEST_CASE("a barrier that half the block never reaches is a deadlock, reported per warp") {
  std::vector<int32_t> out;
  auto error = runText(R"(module t
kernel k(%out: tensor<int32, align 4>) threads=96 grid=(none, none, none) dynamic_smem=0 {
  if (threadIdx.x < 32:int32) {
    barrier 1, 64
  }
}
)",
                       out);
  REQUIRE(error);
  CHECK(*error == "k: deadlock; warp 0 waits for barrier 1 (32 of 64 threads arrived)");
}

TEST_CASE("mbarrier phases: a waiter goes on once its phase's arrivals came; parity 1 passes at "
          "once on a fresh barrier") {
  const char *text = R"(module t
kernel k(%out: tensor<int32, align 4>) threads=64 grid=(none, none, none) dynamic_smem=16 {
  if (threadIdx.x == 0:int32) {
    mbarrier.init smem[8:int32], 32:int32
    mbarrier.wait smem[8:int32], 1:int32
  }
  barrier
  if (threadIdx.x >= 32:int32) {
    smem[0:int32] = 7:int32
    mbarrier.arrive smem[8:int32]
  } else {
    mbarrier.wait smem[8:int32], 0:int32
    store %out[cast<int64>(threadIdx.x)] = smem<int32>[0:int32], align 4
  }
}
)";
  for (bool interleave : {false, true}) {
    CAPTURE(interleave);
    std::vector<int32_t> out;
    auto error = runText(text, out, interleave);
    REQUIRE_MESSAGE(!error, *error);
    for (int t = 0; t < 32; ++t)
      CHECK(out[t] == 7);
  }
}

TEST_CASE("an mbarrier whose arrivals never all come is a deadlock naming its state") {
  std::vector<int32_t> out;
  auto error = runText(R"(module t
kernel k(%out: tensor<int32, align 4>) threads=64 grid=(none, none, none) dynamic_smem=16 {
  if (threadIdx.x == 0:int32) {
    mbarrier.init smem[8:int32], 64:int32
  }
  barrier
  if (threadIdx.x >= 32:int32) {
    mbarrier.arrive.expect_tx smem[8:int32], 16:int32
  } else {
    mbarrier.wait smem[8:int32], 0:int32
  }
}
)",
                       out);
  REQUIRE(error);
  CHECK(*error == "k: deadlock; warp 0 waits for the mbarrier at byte 8 (parity 0; phase 0, 32 "
                  "of 64 arrivals pending, 512 transaction bytes)");
}

TEST_CASE("a store over an mbarrier is an error") {
  std::vector<int32_t> out;
  auto error = runText(R"(module t
kernel k(%out: tensor<int32, align 4>) threads=32 grid=(none, none, none) dynamic_smem=16 {
  if (threadIdx.x == 0:int32) {
    mbarrier.init smem[8:int32], 1:int32
    smem[12:int32] = 1:int32
  }
}
)",
                       out);
  REQUIRE(error);
  CHECK(*error == "k: a store to shared bytes [12, 16) overwrites the mbarrier at byte 8");
}

TEST_CASE("8-bit floats convert as PTX's cvt.rn.satfinite does") {
  std::vector<int32_t> out;
  // 1.0625 lies halfway between e4m3's 1.0 and 1.125: to the even code, 1.0. 500 saturates to
  // 448; e5m2 keeps 57344 and rounds 3.3 to 3.5 (its neighbours are 3.0 and 3.5).
  auto error = runText(R"(module t
kernel k(%out: tensor<int32, align 4>) threads=1 grid=(none, none, none) dynamic_smem=0 {
  store %out[0] = cast<int32>((cast<float32>(cast<float8_e4m3>(1.0625)) * 1000.0)), align 4
  store %out[1] = cast<int32>(cast<float32>(cast<float8_e4m3>(500.0))), align 4
  store %out[2] = cast<int32>(cast<float32>(cast<float8_e5m2>(57344.0))), align 4
  store %out[3] = cast<int32>((cast<float32>(cast<float8_e5m2>(3.3)) * 10.0)), align 4
  store %out[4] = cast<int32>((cast<float32>(cast<float8_e4m3>(-0.0078125)) * 1000000.0)), align 4
}
)",
                       out);
  REQUIRE_MESSAGE(!error, *error);
  CHECK(out[0] == 1000);
  CHECK(out[1] == 448);
  CHECK(out[2] == 57344);
  CHECK(out[3] == 35);
  CHECK(out[4] == -7812); // e4m3's 2^-7 is a normal number: exact
}

TEST_CASE("a store into what a wgmma group in flight reads is an error; after its wait_group it "
          "is not") {
  // A 64 x 16 x 16 fp16 product from 128B-swizzled K-major operands at bytes 0 and 16384, left
  // in flight (wait_group 1), then a store into B's tile.
  const std::string text = R"(module t
kernel k(%out: tensor<int32, align 4>) threads=128 grid=(none, none, none) dynamic_smem=32768 {
  var v0: float32x8 = broadcast<float32x8>(0.0)
  var v2: int64 = (cast<int64>(((smem_address(0:int32) >> 4:int32) & 16383:int32)) + 4611686293305360384)
  var v3: int64 = (cast<int64>(((smem_address(16384:int32) >> 4:int32) & 16383:int32)) + 4611686293305360384)
  var v1: float32x8 = wgmma.m64n16k16.float16.pending1(v0, [acc 0: v2, v3])
  WAIT
  smem[16384:int32] = 0:int32
}
)";
  for (const char *wait : {"", "wgmma.wait 0 ()"}) {
    CAPTURE(wait);
    std::string s = text;
    s.replace(s.find("WAIT"), 4, wait);
    std::vector<int32_t> out;
    auto error = runText(s, out);
    if (*wait) {
      CHECK_MESSAGE(!error, *error);
    } else {
      REQUIRE(error);
      CHECK(error->find("k: a store to shared bytes [16384, 16388) while a wgmma group of "
                        "warpgroup 0 in flight reads [16384, ") == 0);
    }
  }
}

TEST_CASE("a read of what a TMA load wrote needs a wait on its mbarrier (or word of one through a "
          "barrier from a warp that waited)") {
  // Warp 1 loads 32 int32 by TMA; warp 0 reads them after WAIT.
  const std::string text = R"(module t
kernel k(%out: tensor<int32, align 4>, %x: tensor<int32, align 16>, %m: tensor_map<%x, dims (32, 1), strides (128), box (32, 1), swizzle 0>) threads=64 grid=(none, none, none) dynamic_smem=264 {
  if (threadIdx.x == 0:int32) {
    mbarrier.init smem[256:int32], 1:int32
  }
  barrier
  if (threadIdx.x == 32:int32) {
    mbarrier.arrive.expect_tx smem[256:int32], 128:int32
    tma.load smem[0:int32] <- %m[0:int32, 0:int32], mbarrier smem[256:int32]
  }
  WAIT
  if (threadIdx.x < 32:int32) {
    store %out[cast<int64>(threadIdx.x)] = smem<int32>[(threadIdx.x * 4:int32)], align 4
  }
}
)";
  auto runWith = [&](const char *wait) {
    std::string s = text;
    s.replace(s.find("WAIT"), 4, wait);
    SourceManager sm;
    DiagnosticEngine diags(sm);
    auto m = thir::parseThreadIR(sm, sm.addBuffer("t.thir", s), diags);
    REQUIRE_MESSAGE(m, diags.renderAll());
    std::vector<uint8_t> out(128, 0xFF), x(128);
    for (int i = 0; i < 32; ++i)
      std::memcpy(&x[i * 4], &i, 4);
    thir::InterpreterLaunch l;
    l.tensors = {&out, &x, nullptr};
    l.scalars = {0.0, 0.0, 0.0};
    auto error = thir::interpret(m->kernels.at(0), l);
    if (!error)
      CHECK(std::memcmp(out.data(), x.data(), 128) == 0);
    return error;
  };
  auto waited = runWith("mbarrier.wait smem[256:int32], 0:int32");
  CHECK_MESSAGE(!waited, *waited);
  // Warp 1 waits, then both pass a barrier: warp 0 knows through warp 1.
  auto told = runWith("if (threadIdx.x == 32:int32) {\n    mbarrier.wait smem[256:int32], 0:int32\n"
                      "  }\n  barrier");
  CHECK_MESSAGE(!told, *told);
  const std::string early = "k: warp 0 reads shared bytes [0, 4) before it knows the TMA load "
                            "writing [0, 128) complete (phase 0 of the mbarrier at byte 256)";
  auto none = runWith("");
  REQUIRE(none);
  CHECK(*none == early);
  // A barrier alone does not order the asynchronous load: nobody waited for it.
  auto barrierOnly = runWith("barrier");
  REQUIRE(barrierOnly);
  CHECK(*barrierOnly == early);
}

TEST_CASE("a wgmma may read what threads stored only after their fence.proxy.async") {
  const std::string text = R"(module t
kernel k(%out: tensor<int32, align 4>) threads=128 grid=(none, none, none) dynamic_smem=32768 {
  smem[(threadIdx.x * 4:int32)] = 0:int32
  FENCE
  barrier
  var v0: float32x8 = broadcast<float32x8>(0.0)
  var v2: int64 = (cast<int64>(((smem_address(0:int32) >> 4:int32) & 16383:int32)) + 4611686293305360384)
  var v3: int64 = (cast<int64>(((smem_address(16384:int32) >> 4:int32) & 16383:int32)) + 4611686293305360384)
  var v1: float32x8 = wgmma.m64n16k16.float16(v0, [acc 0: v2, v3])
}
)";
  for (const char *fence : {"", "fence.proxy.async.shared"}) {
    CAPTURE(fence);
    std::string s = text;
    s.replace(s.find("FENCE"), 5, fence);
    std::vector<int32_t> out;
    auto error = runText(s, out);
    if (*fence) {
      CHECK_MESSAGE(!error, *error);
    } else {
      REQUIRE(error);
      CHECK(error->find("k: a wgmma reads shared bytes [0, ") == 0);
      CHECK(error->find("that warp 0 wrote at [0, 128) without a fence.proxy.async since") !=
            std::string::npos);
    }
  }
}

TEST_CASE("the interpreter's other protocol errors, each with its message") {
  struct Case {
    const char *body, *error;
  };
  const Case cases[] = {
      {"mbarrier.arrive smem[8:int32]",
       "k: an arrival on shared byte 8, where no mbarrier was initialized"},
      {"if (threadIdx.x == 0:int32) {\n    mbarrier.init smem[4:int32], 1:int32\n  }",
       "k: an mbarrier at shared byte 4, not 8-byte aligned"},
      {"if (threadIdx.x == 0:int32) {\n    mbarrier.init smem[8:int32], 1:int32\n  }\n"
       "  barrier\n  if (threadIdx.x < 2:int32) {\n    mbarrier.arrive.expect_tx smem[8:int32], "
       "16:int32\n  }",
       "k: an arrival on the mbarrier at byte 8 beyond the 1 of its phase"},
      {"if (threadIdx.x < 32:int32) {\n    barrier 1, 64\n  } else {\n    barrier 1, 32\n  }",
       "k: barrier 1 used with 32 threads while it waits for 64"},
  };
  for (const Case &c : cases) {
    const std::string body = c.body;
    CAPTURE(body);
    std::vector<int32_t> out;
    auto error = runText(std::string("module t\nkernel k(%out: tensor<int32, align 4>) threads=64 "
                                     "grid=(none, none, none) dynamic_smem=16 {\n  ") +
                             c.body + "\n}\n",
                         out);
    REQUIRE(error);
    CHECK(*error == c.error);
  }
}

TEST_CASE("malformed wgmma, TMA and cp.async operands are errors, each with its message") {
  // A 64 x 16 x 16 fp16 product as above, with one thing wrong in each case.
  const std::string wgmma = R"(module t
kernel k(%out: tensor<int32, align 4>) threads=128 grid=(none, none, none) dynamic_smem=32768 {
  var v0: float32x8 = broadcast<float32x8>(0.0)
  var v2: int64 = (cast<int64>(((smem_address(0:int32) >> 4:int32) & 16383:int32)) + A_BASE)
  var v3: int64 = (cast<int64>(((smem_address(B_START) >> 4:int32) & 16383:int32)) + 4611686293305360384)
  GUARD
  var v1: float32x8 = wgmma.m64n16k16.float16(v0, [acc 0: v2, v3])
  END
}
)";
  struct Case {
    const char *aBase, *bStart, *guard, *end, *error;
  };
  const Case cases[] = {
      // Bits 49-51: a matrix base offset.
      {"4612249243258781696", "16384:int32", "", "",
       "k: a wgmma descriptor with a matrix base offset (the interpreter supports none)"},
      {"4611686293305360384", "(16384:int32 + ((threadIdx.x / 32:int32) * 1024:int32))", "", "",
       "k: warpgroup 0's threads disagree on a wgmma descriptor"},
      {"4611686293305360384", "16384:int32", "if (threadIdx.x != 5:int32) {", "}",
       "k: a wgmma in a warp with inactive threads"},
  };
  for (const Case &c : cases) {
    std::string s = wgmma;
    for (auto [from, to] : {std::pair{"A_BASE", c.aBase}, std::pair{"B_START", c.bStart},
                            std::pair{"GUARD", c.guard}, std::pair{"END", c.end}})
      s.replace(s.find(from), std::strlen(from), to);
    CAPTURE(s);
    std::vector<int32_t> out;
    auto error = runText(s, out);
    REQUIRE(error);
    CHECK(*error == c.error);
  }

  std::vector<int32_t> out;
  auto cpAsync = runText(R"(module t
kernel k(%out: tensor<int32, align 4>) threads=32 grid=(none, none, none) dynamic_smem=512 {
  cp.async smem[(threadIdx.x * 16:int32)] <- %out[0:int64], 16 bytes, reading 17:int32
}
)",
                         out);
  REQUIRE(cpAsync);
  CHECK(*cpAsync == "k: cp.async of 17 source bytes");
}

TEST_CASE("a TMA load into shared memory that is not 128-byte aligned is an error") {
  SourceManager sm;
  DiagnosticEngine diags(sm);
  auto m = thir::parseThreadIR(sm, sm.addBuffer("t.thir", R"(module t
kernel k(%x: tensor<int32, align 16>, %m: tensor_map<%x, dims (32, 1), strides (128), box (32, 1), swizzle 0>) threads=32 grid=(none, none, none) dynamic_smem=264 {
  if (threadIdx.x == 0:int32) {
    mbarrier.init smem[256:int32], 1:int32
    mbarrier.arrive.expect_tx smem[256:int32], 128:int32
    tma.load smem[64:int32] <- %m[0:int32, 0:int32], mbarrier smem[256:int32]
  }
}
)"),
                               diags);
  REQUIRE_MESSAGE(m, diags.renderAll());
  std::vector<uint8_t> x(128);
  thir::InterpreterLaunch l;
  l.tensors = {&x, nullptr};
  l.scalars = {0.0, 0.0};
  auto error = thir::interpret(m->kernels.at(0), l);
  REQUIRE(error);
  CHECK(*error == "k: a TMA load into shared byte 64, not 128-byte aligned");
}
