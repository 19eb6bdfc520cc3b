// sm_90a's warp-specialized pipelines run on the CPU: the programs as `tilec compile` hands them
// to code generation (TMA boxes on mbarrier rings from a producer warp, consumer warpgroups
// issuing wgmma from shared-memory descriptors or with A in registers, persistent blocks walking
// their tiles), in the thread IR interpreter against float64 references at sizes that are not
// multiples of the tiles. Each runs with TMA (as the launch sets it where the tensor maps encode)
// and without (the producer's plain loads), and with the warps running until they wait and
// taking turns after every statement: the protocols must hold under both interleavings.
#include "Interpreted.h"

using namespace tilec;
using namespace tilec::testing;

namespace {

/// The four launches each Hopper program runs under.
void forEachLaunch(
    const std::function<void(const std::function<void(thir::InterpreterLaunch &)> &)> &f) {
  for (bool tma : {true, false})
    for (bool interleave : {false, true}) {
      CAPTURE(tma);
      CAPTURE(interleave);
      f([=](thir::InterpreterLaunch &l) {
        l.tma = tma;
        l.interleaveStatements = interleave;
      });
    }
}

} // namespace

TEST_CASE("flash_attention for sm_90a as written (fp16, D 128; a producer warp, two consumer "
          "warpgroups) matches float64 at a ragged length") {
  forEachLaunch([](const auto &launch) { checkAttention("sm_90a", {}, 150, 32, 11, {}, launch); });
}

TEST_CASE("flash_attention for sm_90a, bf16 at D 64, matches float64") {
  forEachLaunch([](const auto &launch) {
    checkAttention("sm_90a", {{"D", "64"}, {"dtype", "bfloat16"}}, 200, 32, 12, {}, launch);
  });
}

TEST_CASE("flash_attention for sm_90a, persistent (blocks walk several tiles; the next tile's "
          "loads ahead of the epilogue), matches float64") {
  forEachLaunch([](const auto &launch) {
    checkAttention(
        "sm_90a", {}, 300, 32, 13, [](driver::DriverOptions &o) { o.persistent = true; }, launch);
  });
}
