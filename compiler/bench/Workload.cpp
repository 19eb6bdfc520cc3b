#include "bench/Workload.h"

#include "bench/Text.h"
#include "support/IntMath.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>

namespace tilec::bench {

std::optional<int64_t> parseInt(std::string_view text) {
  std::string digits;
  for (char c : trim(text))
    if (c != '_')
      digits += c;
  int64_t v = 0;
  const char *end = digits.data() + digits.size();
  auto [p, ec] = std::from_chars(digits.data(), end, v);
  if (digits.empty() || ec != std::errc() || p != end)
    return std::nullopt;
  return v;
}

namespace {

std::optional<double> parseReal(std::string_view text) {
  std::string s(trim(text));
  if (s == "True")
    return 1.0;
  if (s == "False")
    return 0.0;
  if (s.empty())
    return std::nullopt;
  char *end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size())
    return std::nullopt;
  return v;
}

/// Integer arithmetic shared by both evaluators; nullopt for what a host expression cannot be
/// (division by zero, a float or bit operation).
template <typename Op> std::optional<int64_t> integerBinary(Op op, int64_t x, int64_t y) {
  switch (op) {
  case Op::Add:
    return x + y;
  case Op::Sub:
    return x - y;
  case Op::Mul:
    return x * y;
  case Op::Div:
    return y == 0 ? std::nullopt : std::optional<int64_t>(x / y);
  case Op::FloorDiv:
    return y == 0 ? std::nullopt : std::optional<int64_t>(floorDiv(x, y));
  case Op::Mod:
    return y == 0 ? std::nullopt : std::optional<int64_t>(floorMod(x, y));
  case Op::Min:
    return std::min(x, y);
  case Op::Max:
    return std::max(x, y);
  case Op::Eq:
    return x == y;
  case Op::Ne:
    return x != y;
  case Op::Lt:
    return x < y;
  case Op::Le:
    return x <= y;
  case Op::Gt:
    return x > y;
  case Op::Ge:
    return x >= y;
  case Op::And:
    return x && y;
  case Op::Or:
    return x || y;
  default:
    return std::nullopt;
  }
}

/// Wraps `v` to the integer dtype `t` as a cast on the device does.
int64_t wrapTo(int64_t v, DType t) {
  switch (t) {
  case DType::Bool:
    return v != 0;
  case DType::Int8:
    return static_cast<int8_t>(v);
  case DType::UInt8:
    return static_cast<uint8_t>(v);
  case DType::Int16:
    return static_cast<int16_t>(v);
  case DType::Int32:
    return static_cast<int32_t>(v);
  case DType::UInt32:
    return static_cast<uint32_t>(v);
  default:
    return v;
  }
}

/// Tile-level integer expressions over bound variables (by id): block indices, dimensions,
/// integer scalars, loop variables.
using Env = std::map<int, int64_t>;

std::optional<int64_t> evalTile(const tile::Expr &e, const Env &env) {
  if (!e || isFloat(e->dtype))
    return std::nullopt;
  return std::visit(
      [&](const auto &op) -> std::optional<int64_t> {
        using T = std::decay_t<decltype(op)>;
        if constexpr (std::is_same_v<T, tile::IntImm>) {
          return op.value;
        } else if constexpr (std::is_same_v<T, tile::VarRef>) {
          auto it = env.find(op.var->id);
          return it == env.end() ? std::nullopt : std::optional<int64_t>(it->second);
        } else if constexpr (std::is_same_v<T, tile::Unary>) {
          auto a = evalTile(op.a, env);
          if (!a)
            return std::nullopt;
          if (op.op == tile::UnOp::Neg)
            return -*a;
          if (op.op == tile::UnOp::Not)
            return !*a;
          if (op.op == tile::UnOp::Abs)
            return *a < 0 ? -*a : *a;
          return std::nullopt;
        } else if constexpr (std::is_same_v<T, tile::Binary>) {
          auto a = evalTile(op.a, env), b = evalTile(op.b, env);
          if (!a || !b)
            return std::nullopt;
          return integerBinary(op.op, *a, *b);
        } else if constexpr (std::is_same_v<T, tile::Select>) {
          auto c = evalTile(op.cond, env);
          if (!c)
            return std::nullopt;
          return evalTile(*c ? op.a : op.b, env);
        } else if constexpr (std::is_same_v<T, tile::Cast>) {
          auto a = evalTile(op.a, env);
          if (!a || op.reinterpret)
            return std::nullopt;
          return wrapTo(*a, e->dtype);
        } else {
          return std::nullopt;
        }
      },
      e->op);
}

bool containsGemm(const tile::Body &body) {
  for (const tile::Stmt &s : body) {
    if (std::holds_alternative<tile::Gemm>(s.op))
      return true;
    if (const auto *f = std::get_if<tile::For>(&s.op); f && containsGemm(f->body))
      return true;
    if (const auto *i = std::get_if<tile::If>(&s.op);
        i && (containsGemm(i->then) || containsGemm(i->otherwise)))
      return true;
  }
  return false;
}

std::optional<double> gemmFlops(const tile::Gemm &g, const Env &env) {
  std::vector<tile::Expr> a = g.a.shape(), c = g.c.shape();
  if (a.size() != 2 || c.size() != 2)
    return std::nullopt;
  auto m = evalTile(c[0], env), n = evalTile(c[1], env), k = evalTile(a[g.transA ? 0 : 1], env);
  if (!m || !n || !k)
    return std::nullopt;
  return 2.0 * static_cast<double>(*m) * static_cast<double>(*n) * static_cast<double>(*k);
}

/// A loop runs its body once per iteration with the variable bound; loops this long are
/// counted as trip count times one iteration (whose count must not need the variable).
constexpr int64_t kMaxUnrolledTrips = 4096;

std::optional<double> bodyFlops(const tile::Body &body, Env &env) {
  double total = 0;
  for (const tile::Stmt &s : body) {
    std::optional<double> part = 0.0;
    if (const auto *let = std::get_if<tile::Let>(&s.op)) {
      // Trip counts are often named first (`n_blocks = ceildiv(S, block_N)`).
      if (auto v = evalTile(let->value, env))
        env[let->var->id] = *v;
      else
        env.erase(let->var->id);
      continue;
    }
    if (const auto *g = std::get_if<tile::Gemm>(&s.op)) {
      part = gemmFlops(*g, env);
    } else if (const auto *f = std::get_if<tile::For>(&s.op)) {
      if (!containsGemm(f->body))
        continue;
      if (f->vars.size() != 1)
        return std::nullopt; // a gemm inside a Parallel loop: sema rejects it
      auto begin = evalTile(f->begins[0], env), extent = evalTile(f->extents[0], env);
      std::optional<int64_t> step = f->step ? evalTile(f->step, env) : std::optional<int64_t>(1);
      if (!begin || !extent || !step)
        return std::nullopt;
      int id = f->vars[0]->id;
      if (*extent <= kMaxUnrolledTrips) {
        double sum = 0;
        for (int64_t i = 0; i < *extent; ++i) {
          env[id] = *begin + i * *step;
          auto one = bodyFlops(f->body, env);
          if (!one) {
            env.erase(id);
            return std::nullopt;
          }
          sum += *one;
        }
        env.erase(id);
        part = sum;
      } else {
        auto one = bodyFlops(f->body, env);
        if (!one)
          return std::nullopt;
        part = *one * static_cast<double>(std::max<int64_t>(*extent, 0));
      }
    } else if (const auto *i = std::get_if<tile::If>(&s.op)) {
      if (!containsGemm(i->then) && !containsGemm(i->otherwise))
        continue;
      auto cond = evalTile(i->cond, env);
      if (!cond)
        return std::nullopt;
      part = bodyFlops(*cond ? i->then : i->otherwise, env);
    }
    if (!part)
      return std::nullopt;
    total += *part;
  }
  return total;
}

/// Blocks beyond this many are not walked one by one: the count is then nullopt unless no loop
/// bound depends on the block index (then one block's count times the grid).
constexpr int64_t kMaxWalkedBlocks = int64_t{1} << 20;

std::optional<double> kernelFlops(const tile::Kernel &tk, const Env &base) {
  if (!containsGemm(tk.body))
    return 0.0;
  // The blocks of the program's own grid (the launch grid may differ under use_swizzle).
  std::array<int64_t, 3> grid = {1, 1, 1};
  for (size_t a = 0; a < tk.grid.size() && a < 3; ++a) {
    auto v = evalTile(tk.grid[a], base);
    if (!v)
      return std::nullopt;
    grid[a] = std::max<int64_t>(*v, 0);
  }
  int64_t blocks = grid[0] * grid[1] * grid[2];
  Env env = base;
  // One block with the block indices unbound: enough when no trip count depends on them.
  if (auto uniform = bodyFlops(tk.body, env))
    return *uniform * static_cast<double>(blocks);
  if (blocks > kMaxWalkedBlocks)
    return std::nullopt;
  double total = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    for (const tile::VarPtr &v : tk.blockIndices) {
      int64_t before = 1;
      for (int a = 0; a < v->index; ++a)
        before *= grid[a];
      env[v->id] = (b / before) % grid[v->index];
    }
    auto one = bodyFlops(tk.body, env);
    if (!one)
      return std::nullopt;
    total += *one;
  }
  return total;
}

const tile::Param *tileParam(const tile::Kernel &tk, const std::string &name) {
  for (const tile::Param &p : tk.params) {
    const std::string &n = p.kind == tile::ParamKind::Tensor ? p.tensor->name : p.scalar->name;
    if (n == name)
      return &p;
  }
  return nullptr;
}

} // namespace

bool parseAssignments(std::string_view text, Assignments &out, std::string &error) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find_first_of(",;", start);
    std::string_view item =
        trim(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (!item.empty()) {
      size_t eq = item.find('=');
      std::string_view name = eq == std::string_view::npos ? item : trim(item.substr(0, eq));
      std::string_view value =
          eq == std::string_view::npos ? std::string_view() : trim(item.substr(eq + 1));
      if (eq == std::string_view::npos || name.empty() || value.empty()) {
        error = fmt::format("expected NAME=VALUE, got '{}'", item);
        return false;
      }
      out[std::string(name)] = std::string(value);
    }
    if (end == std::string_view::npos)
      break;
    start = end + 1;
  }
  return true;
}

std::optional<uint64_t> parseByteSize(std::string_view text) {
  text = trim(text);
  size_t digits = 0;
  while (digits < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '_'))
    ++digits;
  auto n = parseInt(text.substr(0, digits));
  if (!n || *n <= 0)
    return std::nullopt;
  std::string_view unit = trim(text.substr(digits));
  static const std::pair<std::string_view, uint64_t> kUnits[] = {{"", 1},
                                                                 {"B", 1},
                                                                 {"k", 1000},
                                                                 {"K", 1000},
                                                                 {"kB", 1000},
                                                                 {"KB", 1000},
                                                                 {"M", 1000000},
                                                                 {"MB", 1000000},
                                                                 {"G", 1000000000},
                                                                 {"GB", 1000000000},
                                                                 {"KiB", 1 << 10},
                                                                 {"MiB", 1 << 20},
                                                                 {"GiB", uint64_t{1} << 30}};
  for (const auto &[name, scale] : kUnits)
    if (unit == name) {
      if (static_cast<uint64_t>(*n) > (uint64_t{1} << 50) / scale)
        return std::nullopt;
      return static_cast<uint64_t>(*n) * scale;
    }
  return std::nullopt;
}

std::optional<int64_t> evalHost(const thir::Expr &e, const std::vector<int64_t> &params) {
  if (!e || isFloat(e->type.elem) || e->type.lanes != 1)
    return std::nullopt;
  return std::visit(
      [&](const auto &op) -> std::optional<int64_t> {
        using T = std::decay_t<decltype(op)>;
        if constexpr (std::is_same_v<T, thir::ConstInt>) {
          return op.value;
        } else if constexpr (std::is_same_v<T, thir::ParamRef>) {
          if (op.index < 0 || static_cast<size_t>(op.index) >= params.size())
            return std::nullopt;
          return params[op.index];
        } else if constexpr (std::is_same_v<T, thir::Binary>) {
          auto a = evalHost(op.a, params), b = evalHost(op.b, params);
          if (!a || !b)
            return std::nullopt;
          return integerBinary(op.op, *a, *b);
        } else if constexpr (std::is_same_v<T, thir::Select>) {
          auto c = evalHost(op.cond, params);
          if (!c)
            return std::nullopt;
          return evalHost(*c ? op.a : op.b, params);
        } else if constexpr (std::is_same_v<T, thir::Cast>) {
          auto a = evalHost(op.a, params);
          if (!a)
            return std::nullopt;
          return wrapTo(*a, e->type.elem);
        } else {
          return std::nullopt;
        }
      },
      e->op);
}

std::string checkNames(const std::vector<tile::Kernel> &kernels, const Assignments &shapes,
                       const Assignments &args) {
  // In the order the program declares them, each once.
  std::vector<std::string> dims, scalars;
  auto add = [](std::vector<std::string> &list, const std::string &name) {
    if (std::find(list.begin(), list.end(), name) == list.end())
      list.push_back(name);
  };
  for (const tile::Kernel &k : kernels) {
    for (const tile::VarPtr &d : k.dims)
      add(dims, d->name);
    for (const tile::Param &p : k.params)
      if (p.kind == tile::ParamKind::Scalar)
        add(scalars, p.scalar->name);
  }
  auto known = [](const std::vector<std::string> &list, const std::string &name) {
    return std::find(list.begin(), list.end(), name) != list.end();
  };
  auto listed = [](const std::vector<std::string> &list) {
    return list.empty() ? std::string("none") : fmt::format("{}", fmt::join(list, ", "));
  };
  for (const auto &[name, value] : shapes)
    if (!known(dims, name))
      return fmt::format("--shape names '{}', which is not a symbolic dimension of the program "
                         "(its dimensions: {})",
                         name, listed(dims));
  for (const auto &[name, value] : args)
    if (!known(scalars, name))
      return fmt::format("--arg names '{}', which is not a scalar parameter of the program "
                         "(its scalars: {})",
                         name, listed(scalars));
  return "";
}

std::optional<Launch> planLaunch(const tile::Kernel &tk, const thir::Kernel &k,
                                 const Assignments &shapes, const Assignments &args,
                                 std::string &error) {
  Launch l;
  l.kernel = &k;
  l.intValues.assign(k.params.size(), 0);
  l.scalarValues.assign(k.params.size(), 0.0);
  Env env;
  std::vector<std::string> missing;
  for (const tile::VarPtr &d : tk.dims) {
    auto it = shapes.find(d->name);
    if (it == shapes.end()) {
      missing.push_back(d->name);
      continue;
    }
    auto v = parseInt(it->second);
    if (!v || *v <= 0) {
      error =
          fmt::format("--shape {}={}: a dimension must be a positive integer", d->name, it->second);
      return std::nullopt;
    }
    env[d->id] = *v;
    l.dims.emplace_back(d->name, *v);
  }
  if (!missing.empty()) {
    std::vector<std::string> all;
    for (const tile::VarPtr &d : tk.dims)
      all.push_back(d->name);
    error = fmt::format("kernel '{}' needs --shape values for {} (its symbolic dimensions: {})",
                        tk.name, fmt::join(missing, ", "), fmt::join(all, ", "));
    return std::nullopt;
  }
  for (const tile::Param &p : tk.params) {
    if (p.kind != tile::ParamKind::Scalar)
      continue;
    const tile::Var &v = *p.scalar;
    auto it = args.find(v.name);
    double value = 1.0;
    if (it != args.end()) {
      auto parsed = parseReal(it->second);
      if (!parsed || (!isFloat(v.dtype) && *parsed != std::trunc(*parsed))) {
        error =
            fmt::format("--arg {}={}: not a value of {}", v.name, it->second, dtypeName(v.dtype));
        return std::nullopt;
      }
      value = *parsed;
    }
    if (!isFloat(v.dtype))
      env[v.id] = static_cast<int64_t>(value);
    for (size_t i = 0; i < k.params.size(); ++i)
      if (k.params[i].kind == thir::ParamKind::Scalar && k.params[i].name == v.name) {
        l.scalarValues[i] = value;
        if (!isFloat(v.dtype))
          l.intValues[i] = static_cast<int64_t>(value);
      }
  }
  for (size_t i = 0; i < k.params.size(); ++i) {
    const thir::Param &p = k.params[i];
    if (p.kind == thir::ParamKind::Dim) {
      auto it = std::find_if(l.dims.begin(), l.dims.end(),
                             [&](const auto &d) { return d.first == p.name; });
      if (it == l.dims.end()) {
        error = fmt::format("internal: kernel '{}' has dimension '{}' only in thread IR", k.name,
                            p.name);
        return std::nullopt;
      }
      l.intValues[i] = it->second;
    } else if (p.kind == thir::ParamKind::Tensor) {
      const tile::Param *tp = tileParam(tk, p.name);
      if (!tp || tp->kind != tile::ParamKind::Tensor) {
        error =
            fmt::format("internal: kernel '{}' has tensor '{}' only in thread IR", k.name, p.name);
        return std::nullopt;
      }
      TensorArg t;
      t.param = static_cast<int>(i);
      t.name = p.name;
      t.dtype = p.dtype;
      uint64_t elems = 1;
      for (const tile::Expr &s : tp->tensor->shape) {
        auto v = evalTile(s, env);
        const bool computed = tile::isComputedDim(s);
        if (!v || (!computed && *v <= 0)) {
          error = fmt::format("the shape of tensor '{}' is not known from --shape", p.name);
          return std::nullopt;
        }
        if (computed && (*v <= 0 || *v > INT32_MAX)) {
          // A dimension computed from the others (`K // 2`) out of the range a launch accepts.
          error = fmt::format("tensor '{}' would have a dimension {} = {} at these shapes: a "
                              "dimension must be in 1 .. 2^31-1",
                              p.name, tile::printBare(s), *v);
          return std::nullopt;
        }
        t.shape.push_back(*v);
        elems *= static_cast<uint64_t>(*v);
      }
      t.bytes = (elems * static_cast<uint64_t>(dtypeBits(p.dtype)) + 7) / 8;
      l.bytes += t.bytes;
      l.tensors.push_back(std::move(t));
    }
  }
  for (size_t a = 0; a < 3; ++a) {
    if (!k.grid[a])
      continue;
    auto v = evalHost(k.grid[a], l.intValues);
    if (!v) {
      error = fmt::format("the launch grid of kernel '{}' cannot be evaluated", k.name);
      return std::nullopt;
    }
    l.grid[a] = *v;
  }
  if (l.grid[0] < 1 || l.grid[1] < 1 || l.grid[2] < 1) {
    error = fmt::format("kernel '{}' would launch an empty grid ({} x {} x {}) at these shapes",
                        k.name, l.grid[0], l.grid[1], l.grid[2]);
    return std::nullopt;
  }
  if (l.grid[0] >= (int64_t{1} << 31) || l.grid[1] > 65535 || l.grid[2] > 65535) {
    error = fmt::format("kernel '{}' would launch a grid of {} x {} x {} blocks, beyond CUDA's "
                        "limits (2^31-1 x 65535 x 65535)",
                        k.name, l.grid[0], l.grid[1], l.grid[2]);
    return std::nullopt;
  }
  // A persistent kernel numbers the grid's blocks in 32 bits (the header refuses the same).
  if (k.persistentBlocksPerSM > 0 &&
      l.grid[0] * l.grid[1] * l.grid[2] > std::numeric_limits<int32_t>::max()) {
    error = fmt::format("kernel '{}' is persistent and would walk {} blocks, more than 2^31-1",
                        k.name, l.grid[0] * l.grid[1] * l.grid[2]);
    return std::nullopt;
  }
  l.flops = kernelFlops(tk, env);
  return l;
}

} // namespace tilec::bench
