// The read-modify-write operations of the atomic tile operations (`atomic_add`, ...): one list
// that sema, both IRs, their printers and parser, lowering and codegen share. A new operation
// is an entry here, its row in sema's table of tile operations, and its instruction in codegen.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tilec {

enum class AtomicOp { Add, Max, Min };

inline constexpr AtomicOp kAtomicOps[] = {AtomicOp::Add, AtomicOp::Max, AtomicOp::Min};

/// The operation as the language spells it after `atomic_`: "add".
constexpr std::string_view atomicOpName(AtomicOp op) {
  switch (op) {
  case AtomicOp::Add:
    return "add";
  case AtomicOp::Max:
    return "max";
  case AtomicOp::Min:
    return "min";
  }
  return "?";
}

/// How the IR dumps write the update: `C[i] += v`, `C[i] max= v`.
inline std::string atomicOpUpdate(AtomicOp op) {
  return op == AtomicOp::Add ? "+=" : std::string(atomicOpName(op)) + "=";
}

/// The verb of diagnostics and reports: "adds" for add, "updates" for the others.
constexpr std::string_view atomicOpVerb(AtomicOp op) {
  return op == AtomicOp::Add ? "adds" : "updates";
}

inline std::optional<AtomicOp> atomicOpByName(std::string_view name) {
  for (AtomicOp op : kAtomicOps)
    if (atomicOpName(op) == name)
      return op;
  return std::nullopt;
}

} // namespace tilec
