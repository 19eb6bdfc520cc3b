// print(Module): the text form that parseThreadIR reads back (docs/thread-ir.md).
//
// Codegen emits each node once per statement (its cache is keyed by node and cleared between
// statements), so sharing within a statement is part of the program: a node that a statement
// reaches twice is printed once, as `let $N = ...` before the statement, and referred to as $N.
// Sharing across statements changes nothing and is not printed.
#include "threadir/ThreadIR.h"
#include "threadir/ThreadIRNames.h"
#include "threadir/ThreadIRText.h"

#include <fmt/format.h>

#include <bit>
#include <cctype>
#include <cmath>
#include <unordered_map>

namespace tilec::thir {

namespace {

class ModulePrinter {
public:
  explicit ModulePrinter(std::string &out) : out_(out) {}

  void module(const Module &m) {
    out_ += fmt::format("module {}\n", text::name(m.name));
    for (const Kernel &k : m.kernels)
      kernel(k);
  }

private:
  void kernel(const Kernel &k) {
    k_ = &k;
    lets_.clear();
    std::string params;
    for (const Param &p : k.params)
      params +=
          fmt::format("{}%{}: {}", params.empty() ? "" : ", ", text::name(p.name), paramType(p));
    std::string grid;
    for (size_t i = 0; i < k.grid.size(); ++i) {
      lets_.clear();
      grid += fmt::format("{}{}", i ? ", " : "", k.grid[i] ? expr(k.grid[i]) : "none");
    }
    std::string checks;
    for (const DimCheck &c : k.dimChecks) {
      lets_.clear();
      checks +=
          fmt::format("{}{} {}", checks.empty() ? "" : ", ", expr(c.value), text::quoted(c.what));
    }
    out_ += fmt::format(
        "kernel {}({}) threads={} grid=({}) dynamic_smem={}{}{}{}{} {{\n", text::name(k.name),
        params, k.threads, grid, k.dynamicSharedBytes,
        k.minBlocksPerSM ? fmt::format(" blocks_per_sm={}", k.minBlocksPerSM) : std::string(),
        k.persistentBlocksPerSM ? fmt::format(" persistent={}", k.persistentBlocksPerSM)
                                : std::string(),
        k.persistentBalanceX ? " balance_x" : "",
        checks.empty() ? std::string() : fmt::format(" checks=({})", checks));
    body(k.body, 1);
    out_ += "}\n";
  }

  std::string paramType(const Param &p) {
    // alignBytes means something only for tensors; lowering leaves it 0 elsewhere.
    std::string align = p.alignBytes ? fmt::format(" align {}", p.alignBytes) : "";
    switch (p.kind) {
    case ParamKind::Tensor:
      return fmt::format("tensor<{}, align {}>", dtypeName(p.dtype), p.alignBytes);
    case ParamKind::Scalar:
      return fmt::format("{}{}", dtypeName(p.dtype), align);
    case ParamKind::Dim:
      return p.dtype == DType::Int64 ? "dim" + align
                                     : fmt::format("dim<{}>{}", dtypeName(p.dtype), align);
    case ParamKind::TensorMap:
      return tensorMapType(p);
    case ParamKind::TmaEnabled:
      return p.dtype == DType::Int32 ? "tma_enabled" + align
                                     : fmt::format("tma_enabled<{}>{}", dtypeName(p.dtype), align);
    }
    return "?";
  }
  std::string tensorMapType(const Param &p) {
    auto list = [&](const std::vector<Expr> &es) {
      std::string s;
      for (const Expr &e : es)
        s += fmt::format("{}{}", s.empty() ? "" : ", ", expr(e));
      return s;
    };
    std::string box;
    for (int b : p.map.box)
      box += fmt::format("{}{}", box.empty() ? "" : ", ", b);
    std::string tensor = p.map.tensor >= 0 && static_cast<size_t>(p.map.tensor) < k_->params.size()
                             ? param(p.map.tensor)
                             : "<bad tensor>";
    return fmt::format("tensor_map<{}, dims ({}), strides ({}), box ({}), swizzle {}>", tensor,
                       list(p.map.dims), list(p.map.strides), box, p.map.swizzleBytes);
  }

  void body(const Body &b, int depth) {
    for (const Stmt &s : b)
      std::visit([&](const auto &op) { stmt(op, depth); }, s.op);
  }

  void line(int depth, std::string_view text) {
    out_.append(static_cast<size_t>(depth) * 2, ' ');
    out_ += text;
    out_ += '\n';
  }

  // ---- Sharing within one statement ------------------------------------------------------
  void countRefs(const Expr &e, std::unordered_map<const Node *, int> &refs,
                 std::vector<const Node *> &postorder) {
    if (!e || ++refs[e.get()] > 1)
      return;
    forEachOperand(*e, [&](const Expr &c) { countRefs(c, refs, postorder); });
    postorder.push_back(e.get());
  }

  /// Prints a `let` for each non-leaf node the statement's expressions reach more than once,
  /// operands first, and makes expr() refer to it by name.
  void bindShared(const std::vector<Expr> &roots, int depth) {
    lets_.clear();
    std::unordered_map<const Node *, int> refs;
    std::vector<const Node *> postorder;
    for (const Expr &r : roots)
      countRefs(r, refs, postorder);
    for (const Node *n : postorder) {
      if (refs[n] < 2 || isLeaf(*n))
        continue;
      std::string def = exprDef(*n);
      int id = static_cast<int>(lets_.size());
      lets_.emplace(n, id);
      line(depth, fmt::format("let ${} = {}", id, def));
    }
  }

  // ---- Expressions -----------------------------------------------------------------------
  std::string expr(const Expr &e) {
    if (!e)
      return "<null>";
    auto it = lets_.find(e.get());
    if (it != lets_.end())
      return fmt::format("${}", it->second);
    return exprDef(*e);
  }
  std::string exprDef(const Node &n) {
    return std::visit([&](const auto &op) { return exprOp(op, n); }, n.op);
  }

  std::string param(int index) const {
    if (index >= 0 && static_cast<size_t>(index) < k_->params.size())
      return fmt::format("%{}", text::name(k_->params[index].name));
    return fmt::format("<param {}>", index);
  }

  std::string exprOp(const ConstInt &c, const Node &n) {
    if (n.type == Type{DType::Int64, 1})
      return fmt::format("{}", c.value);
    return fmt::format("{}:{}", c.value, typeString(n.type));
  }
  std::string exprOp(const ConstFloat &c, const Node &n) {
    if (n.type == Type{DType::Float32, 1})
      return text::floatLiteral(c.value);
    return fmt::format("{}:{}", text::floatLiteral(c.value), typeString(n.type));
  }
  std::string exprOp(const Undef &, const Node &n) {
    return fmt::format("undef<{}>", typeString(n.type));
  }
  std::string exprOp(const ParamRef &p, const Node &) { return param(p.index); }
  std::string exprOp(const SpecialReg &s, const Node &) {
    return std::string(names::special(s.reg));
  }
  std::string exprOp(const VarRef &v, const Node &) { return fmt::format("v{}", v.id); }
  std::string exprOp(const Unary &u, const Node &) {
    return fmt::format("{}({})", names::unOp(u.op), expr(u.a));
  }
  std::string exprOp(const Binary &b, const Node &) {
    std::string_view infix = names::binOpInfix(b.op);
    if (!infix.empty())
      return fmt::format("({} {} {})", expr(b.a), infix, expr(b.b));
    return fmt::format("{}({}, {})", names::binOpCall(b.op), expr(b.a), expr(b.b));
  }
  std::string exprOp(const Select &s, const Node &) {
    return fmt::format("select({}, {}, {})", expr(s.cond), expr(s.a), expr(s.b));
  }
  std::string exprOp(const Cast &c, const Node &n) {
    return fmt::format("cast<{}>({})", typeString(n.type), expr(c.a));
  }
  std::string exprOp(const Broadcast &b, const Node &n) {
    return fmt::format("broadcast<{}>({})", typeString(n.type), expr(b.a));
  }
  std::string exprOp(const GlobalLoad &l, const Node &n) {
    return fmt::format("load<{}>({}[{}], align {})", typeString(n.type), param(l.param),
                       expr(l.index), l.alignBytes);
  }
  std::string exprOp(const ExtractLane &e, const Node &) {
    return fmt::format("{}[lane {}]", expr(e.vec), e.lane);
  }
  std::string exprOp(const MakeVector &m, const Node &n) {
    std::string elems;
    for (const Expr &e : m.elems)
      elems += (elems.empty() ? "" : ", ") + expr(e);
    return fmt::format("vector<{}>({})", typeString(n.type), elems);
  }
  std::string exprOp(const Shfl &s, const Node &) {
    return fmt::format("shfl.{}({}, {})", shflModeName(s.mode), expr(s.value), expr(s.arg));
  }
  std::string exprOp(const ShflXor &s, const Node &) {
    return fmt::format("shfl_xor({}, {})", expr(s.value), s.laneMask);
  }
  std::string exprOp(const SharedLoad &l, const Node &n) {
    return fmt::format("smem<{}>[{}{}]", typeString(n.type), expr(l.byteOffset),
                       regionSuffix(l.region));
  }
  std::string exprOp(const LdMatrix &l, const Node &) {
    return fmt::format("ldmatrix.x{}{}(smem[{}{}])", l.num, l.trans ? ".trans" : "",
                       expr(l.byteOffset), regionSuffix(l.region));
  }
  std::string exprOp(const MmaSync &m, const Node &) {
    return fmt::format("mma.m16n8k16.{}({}, {}, {})", dtypeName(m.inputType), expr(m.a), expr(m.b),
                       expr(m.c));
  }
  std::string exprOp(const Mfma &m, const Node &) {
    return fmt::format("mfma.m{}n{}k{}.{}({}, {}, {})", m.m, m.n, m.k, dtypeName(m.inputType),
                       expr(m.a), expr(m.b), expr(m.c));
  }
  std::string exprOp(const Bitcast &b, const Node &n) {
    return fmt::format("bitcast<{}>({})", typeString(n.type), expr(b.a));
  }
  std::string exprOp(const SharedAddress &a, const Node &) {
    return fmt::format("smem_address({})", expr(a.byteOffset));
  }
  std::string exprOp(const Wgmma &w, const Node &) {
    std::string s = fmt::format(
        "wgmma.m64n{}k{}.{}{}{}{}{}{}{}({}", w.n, w.k(), dtypeName(w.inputType),
        w.bInputType ? "." + std::string(dtypeName(*w.bInputType)) : "",
        w.aInRegisters ? ".rs" : "", w.aMnMajor ? ".a_mn_major" : "",
        w.bMnMajor ? ".b_mn_major" : "", w.pending ? fmt::format(".pending{}", w.pending) : "",
        turnSuffix(w.turn), expr(w.acc));
    if (w.clearAcc)
      s += fmt::format(", [clear if {}]", expr(w.clearAcc));
    if (w.active)
      s += fmt::format(", [issue if {}]", expr(w.active));
    for (const WgmmaInstr &i : w.instrs)
      s += fmt::format(", [acc {}: {}, {}]", i.accFirst, expr(i.a), expr(i.bDesc));
    for (const SmemRegion &r : w.reads)
      s += regionSuffix(r);
    return s + ")";
  }

  // ---- Statements ------------------------------------------------------------------------
  void stmt(const DeclVar &d, int depth) {
    bindShared({d.init}, depth);
    line(depth, fmt::format("var v{}: {} = {}", d.id, typeString(d.type), expr(d.init)));
  }
  void stmt(const AssignVar &a, int depth) {
    bindShared({a.value}, depth);
    line(depth, fmt::format("v{} = {}", a.id, expr(a.value)));
  }
  void stmt(const GlobalStore &s, int depth) {
    bindShared({s.index, s.value}, depth);
    line(depth, fmt::format("store {}[{}] = {}, align {}", param(s.param), expr(s.index),
                            expr(s.value), s.alignBytes));
  }
  void stmt(const GlobalAtomic &s, int depth) {
    bindShared({s.index, s.value}, depth);
    line(depth, fmt::format("atomic_{} {}[{}] {} {}", atomicOpName(s.op), param(s.param),
                            expr(s.index), atomicOpUpdate(s.op), expr(s.value)));
  }
  void stmt(const SharedAtomic &s, int depth) {
    bindShared({s.byteOffset, s.value}, depth);
    line(depth, fmt::format("atomic_{} smem[{}{}] {} {}", atomicOpName(s.op), expr(s.byteOffset),
                            regionSuffix(s.region), atomicOpUpdate(s.op), expr(s.value)));
  }
  void stmt(const CpAsync &c, int depth) {
    if (c.srcBytes)
      bindShared({c.index, c.byteOffset, c.srcBytes}, depth);
    else
      bindShared({c.index, c.byteOffset}, depth);
    line(depth, fmt::format("cp.async smem[{}] <- {}[{}], 16 bytes{}", expr(c.byteOffset),
                            param(c.param), expr(c.index),
                            c.srcBytes ? fmt::format(", reading {}", expr(c.srcBytes)) : ""));
  }
  void stmt(const CpAsyncCommit &, int depth) { line(depth, "cp.async.commit"); }
  void stmt(const CpAsyncWait &w, int depth) {
    line(depth, fmt::format("cp.async.wait {}", w.pending));
  }
  void stmt(const Printf &p, int depth) {
    bindShared(p.args, depth);
    std::string args;
    for (const Expr &a : p.args)
      args += ", " + expr(a);
    line(depth, fmt::format("printf {}{}", text::quoted(p.format), args));
  }
  void stmt(const IfStmt &s, int depth) {
    bindShared({s.cond}, depth);
    line(depth, fmt::format("if {}{} {{", expr(s.cond), group(s.thenGroup)));
    body(s.then, depth + 1);
    if (!s.otherwise.empty() || s.elseGroup) {
      line(depth, fmt::format("}} else{} {{", group(s.elseGroup)));
      body(s.otherwise, depth + 1);
    }
    line(depth, "}");
  }
  static std::string group(const std::optional<SyncGroup> &g) {
    return g ? fmt::format(" sync {}, {}", g->barrier, g->threads) : std::string();
  }
  void stmt(const ForStmt &s, int depth) {
    bindShared({s.begin, s.end, s.step}, depth);
    std::string unroll = s.unroll            ? " unroll"
                         : s.unrollCount > 1 ? fmt::format(" unroll {}", s.unrollCount)
                                             : "";
    line(depth, fmt::format("for v{}: {} in range({}, {}, {}){} {{", s.var, typeString(s.varType),
                            expr(s.begin), expr(s.end), expr(s.step), unroll));
    body(s.body, depth + 1);
    line(depth, "}");
  }
  void stmt(const Barrier &b, int depth) {
    line(depth, b.threads == 0 && b.id == 0 ? std::string("barrier")
                                            : fmt::format("barrier {}, {}", b.id, b.threads));
  }
  void stmt(const MbarrierInit &m, int depth) {
    bindShared({m.byteOffset, m.count}, depth);
    line(depth, fmt::format("mbarrier.init smem[{}], {}", expr(m.byteOffset), expr(m.count)));
  }
  void stmt(const MbarrierArrive &m, int depth) {
    bindShared({m.byteOffset, m.txBytes}, depth);
    if (m.txBytes)
      line(depth, fmt::format("mbarrier.arrive.expect_tx smem[{}], {}", expr(m.byteOffset),
                              expr(m.txBytes)));
    else
      line(depth, fmt::format("mbarrier.arrive smem[{}]", expr(m.byteOffset)));
  }
  void stmt(const MbarrierWait &m, int depth) {
    bindShared({m.byteOffset, m.parity}, depth);
    line(depth, fmt::format("mbarrier.wait smem[{}], {}", expr(m.byteOffset), expr(m.parity)));
  }
  void stmt(const FenceMbarrierInit &, int depth) { line(depth, "fence.mbarrier_init"); }
  void stmt(const WarpgroupTurn &t, int depth) {
    line(depth, fmt::format("turn.{} {}", t.pass ? "pass" : "wait", t.barrier));
  }
  void stmt(const TmaLoad &t, int depth) {
    std::vector<Expr> roots = t.coords;
    roots.push_back(t.byteOffset);
    roots.push_back(t.barOffset);
    bindShared(roots, depth);
    std::string coords;
    for (const Expr &c : t.coords)
      coords += fmt::format("{}{}", coords.empty() ? "" : ", ", expr(c));
    line(depth, fmt::format("tma.load smem[{}] <- {}[{}], mbarrier smem[{}]", expr(t.byteOffset),
                            param(t.map), coords, expr(t.barOffset)));
  }
  void stmt(const SetMaxNReg &r, int depth) {
    line(depth, fmt::format("setmaxnreg.{} {}", r.increase ? "inc" : "dec", r.regs));
  }
  void stmt(const WgmmaWait &w, int depth) {
    std::string vars;
    for (int v : w.vars)
      vars += fmt::format("{}v{}", vars.empty() ? "" : ", ", v);
    line(depth, fmt::format("wgmma.wait {} ({})", w.pending, vars));
  }
  void stmt(const FenceProxyAsync &, int depth) { line(depth, "fence.proxy.async.shared"); }
  void stmt(const FenceCta &, int depth) { line(depth, "fence.acq_rel.cta"); }
  void stmt(const SharedStore &s, int depth) {
    bindShared({s.byteOffset, s.value}, depth);
    line(depth, fmt::format("smem[{}{}] = {}{}", expr(s.byteOffset), regionSuffix(s.region),
                            expr(s.value), s.ahead ? " ahead" : ""));
  }

  std::string &out_;
  const Kernel *k_ = nullptr;
  std::unordered_map<const Node *, int> lets_; // the current statement's shared nodes
};

} // namespace

namespace text {

std::string floatLiteral(double v) {
  if (std::isnan(v)) {
    auto bits = std::bit_cast<uint64_t>(v);
    if (bits == std::bit_cast<uint64_t>(kCanonicalNaN))
      return "nan";
    return fmt::format("nan(0x{:016x})", bits);
  }
  std::string s = fmt::format("{}", v);
  // Always a '.' or an exponent (or inf), so that it never reads back as an integer.
  if (s.find_first_of(".ei") == std::string::npos)
    s += ".0";
  return s;
}

std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\')
      out += {'\\', c};
    else if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (u < 0x20 || u >= 0x7f)
      out += fmt::format("\\x{:02x}", u);
    else
      out += c;
  }
  return out + "\"";
}

bool isIdentifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_'))
    return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_'))
      return false;
  return true;
}

std::string name(std::string_view s) { return isIdentifier(s) ? std::string(s) : quoted(s); }

} // namespace text

std::string print(const Module &m) {
  std::string out;
  ModulePrinter(out).module(m);
  return out;
}

} // namespace tilec::thir
