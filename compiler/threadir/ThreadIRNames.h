// Spellings of thread IR operators, shared by the printers and the parser so that they cannot
// drift apart. Each table is indexed by its enum.
#pragma once

#include "threadir/ThreadIR.h"

#include <array>
#include <optional>
#include <string_view>

namespace tilec::thir::names {

inline constexpr std::array<std::string_view, 15> kUnOps = {
    "neg",   "not",  "abs", "exp",     "exp2",  "log",  "log2",  "sqrt",
    "rsqrt", "tanh", "erf", "sigmoid", "floor", "ceil", "bitnot"};

/// Infix spelling of each BinOp, or empty for the ones written as calls (kBinOpCalls).
inline constexpr std::array<std::string_view, 22> kBinOpInfix = {"+",  "-",  "*",  "/",   "//", "%",
                                                                 "",   "",   "",   "==",  "!=", "<",
                                                                 "<=", ">",  ">=", "and", "or", "&",
                                                                 "^",  "<<", ">>", "|"};
inline constexpr std::array<std::string_view, 22> kBinOpCalls = {
    "", "", "", "", "", "", "pow", "min", "max", "", "",
    "", "", "", "", "", "", "",    "",    "",    "", ""};

inline constexpr std::array<std::string_view, 7> kSpecials = {
    "threadIdx.x", "blockIdx.x", "blockIdx.y", "blockIdx.z", "gridDim.x", "gridDim.y", "gridDim.z"};

template <class E, size_t N>
std::string_view spell(const std::array<std::string_view, N> &table, E e) {
  auto i = static_cast<size_t>(e);
  return i < N ? table[i] : std::string_view("?");
}

template <class E, size_t N>
std::optional<E> lookup(const std::array<std::string_view, N> &table, std::string_view s) {
  if (s.empty())
    return std::nullopt;
  for (size_t i = 0; i < N; ++i)
    if (table[i] == s)
      return static_cast<E>(i);
  return std::nullopt;
}

inline std::string_view unOp(UnOp op) { return spell(kUnOps, op); }
inline std::string_view binOpInfix(BinOp op) { return spell(kBinOpInfix, op); }
inline std::string_view binOpCall(BinOp op) { return spell(kBinOpCalls, op); }
inline std::string_view special(Special s) { return spell(kSpecials, s); }

} // namespace tilec::thir::names
