// Builtin calls: the math and tile builtins, thread primitives, casts, and the list of builtin
// names.
#include "sema/SemaImpl.h"

#include <fmt/format.h>

#include <limits>
#include <set>

namespace tilec::sema {

namespace {

const std::set<std::string> &builtinNames() {
  static const std::set<std::string> names = {
      // kernel structure and loops
      "Kernel", "Parallel", "Pipelined", "serial", "range", "unroll", "Tensor", "Buffer",
      // allocation
      "alloc_shared", "alloc_fragment", "alloc_local", "alloc_var",
      // tile operations are in tileOps() (SemaOps.cpp)
      "make_swizzled_layout",
      // scalar functions
      "max", "min", "abs", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh", "erf", "sigmoid",
      "floor", "ceil", "pow", "cast", "reinterpret", "ceildiv", "infinity", "if_then_else",
      // the thread's own indices and warp shuffles (TileLang's names too)
      "thread_id", "get_thread_binding", "lane_id", "get_lane_idx", "warp_id", "get_warp_idx",
      "shfl_xor", "shfl_down", "shfl_up", "shfl_idx", "shfl_sync",
      // symbolic dimensions declared by name (TileLang's T.dynamic / T.symbolic)
      "dynamic", "symbolic",
      // namespaces
      "T", "GemmWarpPolicy"};
  return names;
}

std::optional<tile::ThreadIndexKind> threadIndexBuiltin(const std::string &n) {
  using K = tile::ThreadIndexKind;
  static const std::map<std::string, K> kinds = {
      {"thread_id", K::Thread}, {"get_thread_binding", K::Thread},
      {"lane_id", K::Lane},     {"get_lane_idx", K::Lane},
      {"warp_id", K::Warp},     {"get_warp_idx", K::Warp}};
  auto it = kinds.find(n);
  if (it == kinds.end())
    return std::nullopt;
  return it->second;
}

std::optional<tile::ShuffleKind> shuffleBuiltin(const std::string &n) {
  using K = tile::ShuffleKind;
  static const std::map<std::string, K> kinds = {{"shfl_xor", K::Xor},
                                                 {"shfl_down", K::Down},
                                                 {"shfl_up", K::Up},
                                                 {"shfl_idx", K::Idx},
                                                 {"shfl_sync", K::Idx}};
  auto it = kinds.find(n);
  if (it == kinds.end())
    return std::nullopt;
  return it->second;
}

std::optional<tile::UnOp> unaryBuiltin(const std::string &n) {
  using tile::UnOp;
  static const std::map<std::string, UnOp> ops = {
      {"abs", UnOp::Abs},         {"exp", UnOp::Exp},     {"exp2", UnOp::Exp2},
      {"log", UnOp::Log},         {"log2", UnOp::Log2},   {"sqrt", UnOp::Sqrt},
      {"rsqrt", UnOp::Rsqrt},     {"tanh", UnOp::Tanh},   {"erf", UnOp::Erf},
      {"sigmoid", UnOp::Sigmoid}, {"floor", UnOp::Floor}, {"ceil", UnOp::Ceil}};
  auto it = ops.find(n);
  if (it == ops.end())
    return std::nullopt;
  return it->second;
}

} // namespace

bool isBuiltin(const std::string &n) { return builtinNames().count(n) || findTileOp(n); }

std::optional<Value> Sema::evalBuiltinCall(const std::string &name, const ast::Expr &e,
                                           const ast::Call &c, LocalScope &scope) {
  SourceLoc loc = e.loc();
  auto noKwargs = [&]() {
    if (c.kwargs.empty())
      return true;
    diags_.error(c.kwargs.front().loc, fmt::format("'{}' takes no keyword arguments", name));
    return false;
  };
  auto argCount = [&](size_t lo, size_t hi) {
    if (c.args.size() >= lo && c.args.size() <= hi)
      return true;
    if (lo == hi)
      diags_.error(loc,
                   fmt::format("'{}' takes {} argument(s), {} given", name, lo, c.args.size()));
    else
      diags_.error(
          loc, fmt::format("'{}' takes {} to {} arguments, {} given", name, lo, hi, c.args.size()));
    return false;
  };
  if (auto op = unaryBuiltin(name)) {
    if (!noKwargs() || !argCount(1, 1))
      return std::nullopt;
    tile::Expr a = evalScalar(*c.args[0], scope, "a scalar");
    if (!a)
      return std::nullopt;
    if (a->dtype == DType::Bool) {
      diags_.error(c.args[0]->loc(), fmt::format("'{}' of a bool", name));
      return std::nullopt;
    }
    return ExprVal{tile::makeUnary(*op, a, loc)};
  }
  if (name == "max" || name == "min") {
    if (!noKwargs())
      return std::nullopt;
    if (c.args.size() < 2) {
      diags_.error(loc, fmt::format("'{}' takes at least 2 arguments", name));
      return std::nullopt;
    }
    tile::Expr acc = evalScalar(*c.args[0], scope, "a scalar");
    for (size_t i = 1; i < c.args.size() && acc; ++i) {
      tile::Expr x = evalScalar(*c.args[i], scope, "a scalar");
      if (!x)
        return std::nullopt;
      // Of bools (False < True) the maximum is `or` and the minimum `and`.
      if (acc->dtype == DType::Bool && x->dtype == DType::Bool) {
        acc = tile::makeBinary(name == "max" ? tile::BinOp::Or : tile::BinOp::And, acc, x, loc);
        continue;
      }
      if (acc->dtype == DType::Bool || x->dtype == DType::Bool) {
        diags_.error(loc,
                     fmt::format("'{}' of bool and {} values; cast the bool first", name,
                                 dtypeName(acc->dtype == DType::Bool ? x->dtype : acc->dtype)));
        return std::nullopt;
      }
      acc = tile::makeBinary(name == "max" ? tile::BinOp::Max : tile::BinOp::Min, acc, x, loc);
    }
    if (!acc)
      return std::nullopt;
    return ExprVal{acc};
  }
  if (name == "pow") {
    if (!noKwargs() || !argCount(2, 2))
      return std::nullopt;
    tile::Expr a = evalScalar(*c.args[0], scope, "a scalar");
    tile::Expr b = evalScalar(*c.args[1], scope, "a scalar");
    if (!a || !b)
      return std::nullopt;
    tile::Expr r = binary(ast::BinaryOp::Pow, a, b, loc);
    return r ? std::optional<Value>(ExprVal{r}) : std::nullopt;
  }
  if (name == "dynamic" || name == "symbolic") {
    // TileLang's optional dtype argument is accepted when it is an integer type: dimensions are
    // 64-bit at launch and 32-bit in the kernel either way.
    if (!noKwargs() || !argCount(1, 2))
      return std::nullopt;
    auto *s = std::get_if<ast::StringLit>(&c.args[0]->node);
    if (!s || !isIdentifier(s->value)) {
      diags_.error(c.args[0]->loc(),
                   fmt::format("{}() takes the dimension's name, a string such as \"m\"", name));
      return std::nullopt;
    }
    if (c.args.size() == 2) {
      auto dt = evalDType(*c.args[1], scope);
      if (!dt)
        return std::nullopt;
      if (!isInteger(*dt)) {
        diags_.error(c.args[1]->loc(),
                     fmt::format("a symbolic dimension is an integer, not {}", dtypeName(*dt)));
        return std::nullopt;
      }
    }
    return DimVal{s->value};
  }
  if (name == "ceildiv") {
    if (!noKwargs() || !argCount(2, 2))
      return std::nullopt;
    tile::Expr a = evalInt(*c.args[0], scope, "the dividend of ceildiv");
    tile::Expr b = evalInt(*c.args[1], scope, "the divisor of ceildiv");
    if (!a || !b)
      return std::nullopt;
    auto cb = tile::asConstInt(b);
    if (cb && *cb <= 0) {
      diags_.error(c.args[1]->loc(), fmt::format("ceildiv divisor must be positive, got {}", *cb));
      return std::nullopt;
    }
    tile::Expr num = binary(ast::BinaryOp::Sub, binary(ast::BinaryOp::Add, a, b, loc),
                            tile::intImm(1, DType::Int32, loc), loc);
    if (!num)
      return std::nullopt;
    tile::Expr r = binary(ast::BinaryOp::FloorDiv, num, b, loc);
    return r ? std::optional<Value>(ExprVal{r}) : std::nullopt;
  }
  // cast(x, dtype) and reinterpret(x, dtype): the value and the dtype.
  auto valueAndDType = [&]() -> std::optional<std::pair<tile::Expr, DType>> {
    if (!noKwargs() || !argCount(2, 2))
      return std::nullopt;
    tile::Expr a = evalScalar(*c.args[0], scope, "a scalar");
    auto dt = evalDType(*c.args[1], scope);
    if (!a || !dt)
      return std::nullopt;
    return std::make_pair(a, *dt);
  };
  if (name == "cast") {
    auto v = valueAndDType();
    if (!v)
      return std::nullopt;
    return ExprVal{tile::makeCast(v->first, v->second, loc)};
  }
  if (name == "reinterpret") {
    auto v = valueAndDType();
    if (!v)
      return std::nullopt;
    auto [a, dt] = *v;
    if (a->dtype == DType::Bool || dt == DType::Bool || dtypeBits(a->dtype) != dtypeBits(dt)) {
      diags_.error(loc, fmt::format("reinterpret from {} ({} bits) to {} ({} bits): the widths "
                                    "must be equal and neither a bool",
                                    dtypeName(a->dtype), dtypeBits(a->dtype), dtypeName(dt),
                                    dtypeBits(dt)));
      return std::nullopt;
    }
    if (a->dtype == dt)
      return ExprVal{a};
    return ExprVal{std::make_shared<tile::Node>(tile::Node{dt, loc, tile::Cast{a, true}})};
  }
  if (name == "infinity") {
    if (!noKwargs() || !argCount(1, 1))
      return std::nullopt;
    auto dt = evalDType(*c.args[0], scope);
    if (!dt)
      return std::nullopt;
    if (!isFloat(*dt)) {
      diags_.error(c.args[0]->loc(),
                   fmt::format("infinity({}) needs a floating-point dtype", dtypeName(*dt)));
      return std::nullopt;
    }
    return ExprVal{tile::floatImm(std::numeric_limits<double>::infinity(), *dt, loc)};
  }
  if (name == "if_then_else") {
    if (!noKwargs() || !argCount(3, 3))
      return std::nullopt;
    tile::Expr cnd = evalScalar(*c.args[0], scope, "a condition");
    if (!cnd)
      return std::nullopt;
    if (auto cc = tile::asConstInt(tile::makeCast(cnd, DType::Bool)))
      return eval(*cc ? *c.args[1] : *c.args[2], scope);
    tile::Expr a = evalScalar(*c.args[1], scope, "a scalar");
    tile::Expr b = evalScalar(*c.args[2], scope, "a scalar");
    if (!a || !b)
      return std::nullopt;
    return ExprVal{tile::makeSelect(cnd, a, b, loc)};
  }
  if (auto kind = threadIndexBuiltin(name)) {
    bool takesDim = *kind == tile::ThreadIndexKind::Thread;
    if (!noKwargs() || !argCount(0, takesDim ? 1 : 0))
      return std::nullopt;
    // get_thread_binding(dim): thread blocks are one-dimensional here.
    if (!c.args.empty()) {
      auto dim = evalConstInt(*c.args[0], scope, "a thread dimension");
      if (!dim)
        return std::nullopt;
      if (*dim != 0) {
        diags_.error(c.args[0]->loc(),
                     fmt::format("not supported yet: {}({}) (thread blocks are one-dimensional: "
                                 "dimension 0 only)",
                                 name, *dim));
        return std::nullopt;
      }
    }
    if (!kernel_) {
      diags_.error(loc, fmt::format("'{}' outside a kernel", name));
      return std::nullopt;
    }
    return ExprVal{tile::varRef(threadIndexVar(*kind, loc), loc)};
  }
  if (auto kind = shuffleBuiltin(name)) {
    if (!noKwargs() || !argCount(2, 2))
      return std::nullopt;
    if (insideParallel(scope)) {
      diags_.error(loc, fmt::format("'{}' cannot be used inside a Parallel loop (its iterations "
                                    "are not one per lane); shuffle in per-thread code",
                                    name));
      return std::nullopt;
    }
    tile::Expr v = evalScalar(*c.args[0], scope, "a scalar");
    tile::Expr arg = evalScalar(*c.args[1], scope, "a lane argument");
    if (!v || !arg)
      return std::nullopt;
    if (v->dtype == DType::Bool || dtypeBits(v->dtype) != 32) {
      diags_.error(c.args[0]->loc(),
                   fmt::format("not supported yet: {} of {} (32-bit values: int32, uint32, "
                               "float32)",
                               name, dtypeName(v->dtype)));
      return std::nullopt;
    }
    if (!isInteger(arg->dtype)) {
      diags_.error(c.args[1]->loc(), fmt::format("the lane argument of '{}' must be an integer, "
                                                 "not {}",
                                                 name, dtypeName(arg->dtype)));
      return std::nullopt;
    }
    arg = tile::makeCast(arg, DType::Int32);
    return ExprVal{
        std::make_shared<tile::Node>(tile::Node{v->dtype, loc, tile::Shuffle{*kind, v, arg}})};
  }
  if (findTileOp(name)) {
    diags_.error(loc, fmt::format("'{}' is a tile operation and has no value; call it as a "
                                  "statement",
                                  name));
    return std::nullopt;
  }
  if (name.rfind("alloc_", 0) == 0) {
    diags_.error(loc, fmt::format("'{}' must be assigned to a name: buf = {}(...)", name, name));
    return std::nullopt;
  }
  if (name == "Parallel" || name == "Pipelined" || name == "serial" || name == "range" ||
      name == "unroll") {
    diags_.error(loc, fmt::format("'{}' can only be the iterator of a for loop", name));
    return std::nullopt;
  }
  if (name == "Kernel") {
    diags_.error(loc, "'Kernel' can only be used as 'with Kernel(...) as ...'");
    return std::nullopt;
  }
  diags_.error(loc, fmt::format("'{}' cannot be called here", name));
  return std::nullopt;
}

tile::VarPtr Sema::threadIndexVar(tile::ThreadIndexKind kind, SourceLoc loc) {
  for (const tile::VarPtr &v : kernel_->threadIndices)
    if (v->index == static_cast<int>(kind))
      return v;
  static constexpr const char *names[] = {"thread_id", "lane_id", "warp_id"};
  tile::VarPtr v = newVar(names[static_cast<int>(kind)], DType::Int32, tile::VarKind::ThreadIndex,
                          loc, static_cast<int>(kind));
  kernel_->threadIndices.push_back(v);
  return v;
}

std::vector<std::string> builtinNameList() {
  std::set<std::string> all = builtinNames();
  for (const TileOpInfo &op : tileOps())
    all.insert(std::string(op.name));
  return {all.begin(), all.end()};
}

} // namespace tilec::sema
