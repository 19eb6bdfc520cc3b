#include "tileir/TileIR.h"

#include <fmt/format.h>

#include <cmath>

namespace tilec::tile {

const char *scopeName(Scope s) {
  switch (s) {
  case Scope::Global:
    return "global";
  case Scope::Shared:
    return "shared";
  case Scope::Fragment:
    return "fragment";
  case Scope::Local:
    return "local";
  case Scope::Var:
    return "var";
  }
  return "?";
}

const char *unOpName(UnOp op) {
  static constexpr const char *names[] = {"neg", "not",     "abs",   "exp",   "exp2",
                                          "log", "log2",    "sqrt",  "rsqrt", "tanh",
                                          "erf", "sigmoid", "floor", "ceil",  "~"};
  return names[static_cast<int>(op)];
}

const char *binOpName(BinOp op) {
  static constexpr const char *names[] = {"+",   "-",  "*",  "/",  "//", "%", "**", "min",
                                          "max", "==", "!=", "<",  "<=", ">", ">=", "and",
                                          "or",  "&",  "^",  "<<", ">>", "|"};
  return names[static_cast<int>(op)];
}

Expr intImm(int64_t v, DType t, SourceLoc loc) {
  return std::make_shared<Node>(Node{t, loc, IntImm{v}});
}
Expr floatImm(double v, DType t, SourceLoc loc) {
  return std::make_shared<Node>(Node{t, loc, FloatImm{v}});
}
Expr varRef(VarPtr v, SourceLoc loc) {
  DType t = v->dtype;
  return std::make_shared<Node>(Node{t, loc, VarRef{std::move(v)}});
}

std::optional<int64_t> asConstInt(const Expr &e) {
  if (!e)
    return std::nullopt;
  if (auto *i = std::get_if<IntImm>(&e->op))
    return i->value;
  return std::nullopt;
}

bool isComputedDim(const Expr &dim) {
  return !asConstInt(dim) && !std::holds_alternative<VarRef>(dim->op);
}

bool Region::whole() const {
  for (size_t d = 0; d < dims.size(); ++d)
    if (dims[d].dropped || asConstInt(dims[d].begin) != 0 ||
        asConstInt(dims[d].extent) != asConstInt(buffer->shape[d]))
      return false;
  return true;
}

Region wholeRegion(const BufferPtr &b, SourceLoc loc) {
  Region r{b, {}, loc};
  for (const Expr &d : b->shape)
    r.dims.push_back({intImm(0), d, false});
  return r;
}

std::vector<Expr> Region::shape() const {
  std::vector<Expr> s;
  for (const RegionDim &d : dims)
    if (!d.dropped)
      s.push_back(d.extent);
  return s;
}

namespace {

std::string printFloat(double v) {
  if (std::isinf(v))
    return v > 0 ? "inf" : "-inf";
  if (std::isnan(v))
    return "nan";
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".eE") == std::string::npos)
    s += ".0";
  return s;
}

std::string printList(const std::vector<Expr> &es) {
  std::string out;
  for (size_t i = 0; i < es.size(); ++i)
    out += (i ? ", " : "") + print(es[i]);
  return out;
}

std::string printRegion(const Region &r) {
  std::string out = r.buffer->name + "[";
  for (size_t i = 0; i < r.dims.size(); ++i) {
    const RegionDim &d = r.dims[i];
    out += i ? ", " : "";
    if (d.dropped)
      out += print(d.begin);
    else
      out += fmt::format("{}+:{}", print(d.begin), print(d.extent));
  }
  return out + "]";
}

class Printer {
public:
  std::string out;
  void line(int indent, const std::string &text) {
    out += std::string(indent * 2, ' ') + text + "\n";
  }

  void body(const Body &b, int indent) {
    for (const Stmt &s : b)
      stmt(s, indent);
  }

  void stmt(const Stmt &s, int ind) {
    std::visit(
        [&](const auto &op) {
          using T = std::decay_t<decltype(op)>;
          if constexpr (std::is_same_v<T, Let>) {
            line(ind, fmt::format("let {}: {} = {}", op.var->name, dtypeName(op.var->dtype),
                                  print(op.value)));
          } else if constexpr (std::is_same_v<T, Store>) {
            if (op.indices.empty())
              line(ind, fmt::format("{} = {}", op.buffer->name, print(op.value)));
            else
              line(ind, fmt::format("{}[{}] = {}", op.buffer->name, printList(op.indices),
                                    print(op.value)));
          } else if constexpr (std::is_same_v<T, Copy>) {
            line(ind, fmt::format("copy {} -> {}", printRegion(op.src), printRegion(op.dst)));
          } else if constexpr (std::is_same_v<T, Fill>) {
            line(ind, fmt::format("fill {} = {}", printRegion(op.dst), print(op.value)));
          } else if constexpr (std::is_same_v<T, Gemm>) {
            static constexpr const char *pol[] = {"Square", "FullRow", "FullCol"};
            line(ind, fmt::format("gemm {}{}, {}{} -> {} policy={}{}", printRegion(op.a),
                                  op.transA ? "^T" : "", printRegion(op.b), op.transB ? "^T" : "",
                                  printRegion(op.c), pol[static_cast<int>(op.policy)],
                                  op.clearAccum ? " clear_accum" : ""));
          } else if constexpr (std::is_same_v<T, Reduce>) {
            static constexpr const char *k[] = {"max", "sum", "min", "absmax", "abssum"};
            line(ind, fmt::format("reduce_{} {} -> {} dim={}{}", k[static_cast<int>(op.kind)],
                                  printRegion(op.src), printRegion(op.dst), op.dim,
                                  op.clear ? " clear" : ""));
          } else if constexpr (std::is_same_v<T, Cumsum>) {
            line(ind, fmt::format("cumsum {} -> {} dim={}{}", printRegion(op.src),
                                  printRegion(op.dst), op.dim, op.reverse ? " reverse" : ""));
          } else if constexpr (std::is_same_v<T, Atomic>) {
            if (op.src)
              line(ind, fmt::format("atomic_{} {} {} {}", atomicOpName(op.op), printRegion(op.dst),
                                    atomicOpUpdate(op.op), printRegion(*op.src)));
            else
              line(ind,
                   fmt::format("atomic_{} {}[{}] {} {}", atomicOpName(op.op), op.dst.buffer->name,
                               printList(op.indices), atomicOpUpdate(op.op), print(op.value)));
          } else if constexpr (std::is_same_v<T, For>) {
            static constexpr const char *k[] = {"parallel", "serial", "unroll", "pipelined"};
            std::string vars;
            for (size_t i = 0; i < op.vars.size(); ++i)
              vars += fmt::format("{}{} in [{}, +{})", i ? ", " : "", op.vars[i]->name,
                                  print(op.begins[i]), print(op.extents[i]));
            std::string extra;
            if (op.step)
              extra += " step " + print(op.step);
            if (op.kind == LoopKind::Pipelined)
              extra += fmt::format(" stages={}", op.numStages);
            line(ind, fmt::format("for {} {}{}:", k[static_cast<int>(op.kind)], vars, extra));
            body(op.body, ind + 1);
          } else if constexpr (std::is_same_v<T, If>) {
            line(ind, fmt::format("if {}:", print(op.cond)));
            body(op.then, ind + 1);
            if (!op.otherwise.empty()) {
              line(ind, "else:");
              body(op.otherwise, ind + 1);
            }
          } else if constexpr (std::is_same_v<T, UseSwizzle>) {
            line(ind, fmt::format("use_swizzle panel={} order={}{}", op.panelSize,
                                  op.colOrder ? "col" : "row", op.enabled ? "" : " disabled"));
          } else if constexpr (std::is_same_v<T, AnnotateLayout>) {
            line(ind, fmt::format("annotate_layout {} {}", op.buffer->name, op.layout));
          } else if constexpr (std::is_same_v<T, Print>) {
            line(ind,
                 fmt::format("print {} \"{}\"",
                             op.buffer ? printRegion(*op.buffer) : print(op.value), op.message));
          } else if constexpr (std::is_same_v<T, SyncThreads>) {
            line(ind, "sync_threads");
          }
        },
        s.op);
  }
};

} // namespace

std::string printBare(const Expr &e) {
  std::string text = print(e);
  // print() parenthesizes every operation: drop the pair when it encloses the whole text.
  int depth = 0;
  bool outer = text.size() > 2 && text.front() == '(';
  for (size_t i = 0; outer && i + 1 < text.size(); ++i) {
    depth += text[i] == '(' ? 1 : text[i] == ')' ? -1 : 0;
    outer = depth > 0;
  }
  return outer ? text.substr(1, text.size() - 2) : text;
}

std::string print(const Expr &e) {
  if (!e)
    return "<null>";
  return std::visit(
      [&](const auto &op) -> std::string {
        using T = std::decay_t<decltype(op)>;
        if constexpr (std::is_same_v<T, IntImm>) {
          if (e->dtype == DType::Bool)
            return op.value ? "True" : "False";
          return e->dtype == DType::Int32 ? fmt::format("{}", op.value)
                                          : fmt::format("{}:{}", op.value, dtypeName(e->dtype));
        } else if constexpr (std::is_same_v<T, FloatImm>) {
          return printFloat(op.value);
        } else if constexpr (std::is_same_v<T, VarRef>) {
          return op.var->name;
        } else if constexpr (std::is_same_v<T, Load>) {
          if (op.indices.empty())
            return op.buffer->name;
          return fmt::format("{}[{}]", op.buffer->name, printList(op.indices));
        } else if constexpr (std::is_same_v<T, Unary>) {
          if (op.op == UnOp::Neg)
            return fmt::format("-{}", print(op.a));
          return fmt::format("{}({})", unOpName(op.op), print(op.a));
        } else if constexpr (std::is_same_v<T, Binary>) {
          if (op.op == BinOp::Min || op.op == BinOp::Max)
            return fmt::format("{}({}, {})", binOpName(op.op), print(op.a), print(op.b));
          return fmt::format("({} {} {})", print(op.a), binOpName(op.op), print(op.b));
        } else if constexpr (std::is_same_v<T, Select>) {
          return fmt::format("select({}, {}, {})", print(op.cond), print(op.a), print(op.b));
        } else if constexpr (std::is_same_v<T, Cast>) {
          if (op.reinterpret)
            return fmt::format("reinterpret({}, {})", print(op.a), dtypeName(e->dtype));
          return fmt::format("{}({})", dtypeName(e->dtype), print(op.a));
        } else if constexpr (std::is_same_v<T, Shuffle>) {
          static constexpr const char *names[] = {"shfl_xor", "shfl_down", "shfl_up", "shfl_idx"};
          return fmt::format("{}({}, {})", names[static_cast<int>(op.kind)], print(op.value),
                             print(op.arg));
        }
      },
      e->op);
}

std::string print(const Program &p) {
  Printer pr;
  for (const Kernel &k : p.kernels) {
    std::string params;
    for (const Param &prm : k.params) {
      params += params.empty() ? "" : ", ";
      if (prm.kind == ParamKind::Tensor)
        params += fmt::format("{}: {}[{}]", prm.tensor->name, dtypeName(prm.tensor->dtype),
                              printList(prm.tensor->shape));
      else
        params += fmt::format("{}: {}", prm.scalar->name, dtypeName(prm.scalar->dtype));
    }
    std::string dims;
    for (const VarPtr &d : k.dims)
      dims += (dims.empty() ? "" : ", ") + d->name;
    pr.line(0, fmt::format("kernel {}({}) dims({})", k.name, params, dims));
    std::string idx;
    for (const VarPtr &b : k.blockIndices)
      idx += (idx.empty() ? "" : ", ") + b->name;
    pr.line(1, fmt::format("grid({}) threads={} as ({})", printList(k.grid), k.threads, idx));
    for (const BufferPtr &b : k.buffers)
      pr.line(1, fmt::format("alloc {} {}: {}[{}]{}", scopeName(b->scope), b->name,
                             dtypeName(b->dtype), printList(b->shape),
                             b->initValue ? " = " + print(b->initValue) : ""));
    pr.body(k.body, 1);
  }
  return pr.out;
}

} // namespace tilec::tile
