// The layout report (`--emit layout`, schema in docs/layout-report.md), printed from the same
// layout objects lowering used.
#pragma once

#include "lower/Lower.h"
#include "tileir/TileIR.h"

#include <string>

namespace tilec::driver {

struct LayoutReportOptions {
  std::string fileName; // no directory: outputs must not depend on where tilec ran
  std::string arch;
  bool full = false; // --layout-detail=full: the owner of every fragment element
};

/// The report as JSON text (ends with a newline).
std::string layoutReport(const tile::Program &p, const lower::Lowered &low,
                         const LayoutReportOptions &opts);

} // namespace tilec::driver
