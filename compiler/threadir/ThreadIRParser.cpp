#include "threadir/ThreadIRParser.h"
#include "threadir/ThreadIRParserImpl.h"

#include "threadir/ThreadIRVerifier.h"

namespace tilec::thir {

using detail::ParseFailed;
using detail::Parser;

std::optional<Module> parseThreadIR(const SourceManager &sm, uint32_t file,
                                    DiagnosticEngine &diags) {
  Parser parser(sm.text(file), file, diags);
  Module m;
  try {
    m = parser.module();
  } catch (const ParseFailed &) {
    return std::nullopt;
  }
  parser.index(m);
  if (!verify(m, diags, [&](const void *p) { return parser.locate(p); }))
    return std::nullopt;
  return m;
}

} // namespace tilec::thir
