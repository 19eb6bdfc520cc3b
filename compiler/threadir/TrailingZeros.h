// Known trailing zero bits of thread-IR integer expressions: a lower bound on how many of an
// offset's low bits are zero on every thread and iteration. Code generation turns it into the
// alignment of shared-memory accesses. LLVM's own known-bits analysis stops six operations
// deep, and a swizzled tile offset is deeper than that, so without this every scalar access to a
// swizzled buffer would be only element-aligned and could never become a vector access.
#pragma once

#include "threadir/ThreadIR.h"

#include <unordered_map>

namespace tilec::thir {

class TrailingZeros {
public:
  /// At least this many low bits of `e` are zero (0..64; 64 for the constant 0). Anything the
  /// analysis does not understand (variables, loads, floats) gives 0.
  int of(const Expr &e);

private:
  int compute(const Node &n);
  struct Known {
    Expr node; // held so that its address is not reused while it is a key
    int zeros;
  };
  std::unordered_map<const Node *, Known> cache_;
};

} // namespace tilec::thir
