// Shared helpers of the libFuzzer targets (see docs/fuzzing.md). Every target feeds the input
// through the compiler the way `tilec` does and catches nothing: an exception escaping (a
// std::logic_error is how the compiler reports its own bugs) aborts the run as a crash.
#pragma once

#include "schedule/Schedule.h"
#include "support/Diagnostics.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace tilec::fuzz {

/// The name the input is registered under; diagnostics quote it.
inline constexpr const char *kInputName = "fuzz.tile";

/// Adds the input to `sm` as the main file.
inline uint32_t addInput(SourceManager &sm, const uint8_t *data, size_t size) {
  return sm.addBuffer(kInputName, std::string(reinterpret_cast<const char *>(data), size));
}

/// Renders every diagnostic: rendering quotes the source line and draws the caret, which must
/// cope with any location a stage reports.
inline void renderDiagnostics(const DiagnosticEngine &diags) {
  std::string text = diags.renderAll();
  (void)text;
}

/// The schedule passes tilec runs after the sync passes, in its order, those off by default on
/// (--split-wgmma-chains, --defer-wgmma-waits), so that every one of them sees fuzzed IR.
inline void runSchedulePasses(thir::Module &m) {
  schedule::interleaveWgmma(m);
  schedule::foldAccumulatorClears(m);
  schedule::splitWgmmaChains(m, 4);
  schedule::deferWgmmaWaits(m);
}

} // namespace tilec::fuzz
