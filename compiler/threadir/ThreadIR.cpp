#include "threadir/ThreadIR.h"

#include "threadir/ThreadIRNames.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace tilec::thir {

namespace {

// Misuse of a builder is a bug in the lowering that called it, not a user error: fail loudly.
[[noreturn]] void misuse(std::string_view what) {
  throw std::logic_error(fmt::format("thread IR builder misuse: {}", what));
}

Expr make(Type t, decltype(Node::op) op) {
  return std::make_shared<const Node>(Node{t, std::move(op)});
}

void requireExpr(const Expr &e, std::string_view builder) {
  if (!e)
    misuse(fmt::format("{}: null operand", builder));
}

bool isMathOp(UnOp op) {
  switch (op) {
  case UnOp::Exp:
  case UnOp::Exp2:
  case UnOp::Log:
  case UnOp::Log2:
  case UnOp::Sqrt:
  case UnOp::Rsqrt:
  case UnOp::Tanh:
  case UnOp::Erf:
  case UnOp::Sigmoid:
  case UnOp::Floor:
  case UnOp::Ceil:
    return true;
  default:
    return false;
  }
}

bool isComparison(BinOp op) {
  return op == BinOp::Eq || op == BinOp::Ne || op == BinOp::Lt || op == BinOp::Le ||
         op == BinOp::Gt || op == BinOp::Ge;
}

bool isPowerOfTwo(int v) { return v > 0 && (v & (v - 1)) == 0; }

// Shortest text that reads back as the same double, always with a '.' or exponent so that a
// float constant never looks like an integer.
std::string floatText(double v) {
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".einn") == std::string::npos)
    s += ".0";
  return s;
}

// The tree form of printExpr.
class TreePrinter {
public:
  std::string expr(const Expr &e, const Kernel &k) {
    if (!e)
      return "<null>";
    return std::visit([&](const auto &op) { return exprOp(op, *e, k); }, e->op);
  }

private:
  static std::string paramName(int index, const Kernel &k) {
    if (index >= 0 && static_cast<size_t>(index) < k.params.size())
      return k.params[index].name;
    return fmt::format("<param {}>", index);
  }

  std::string exprOp(const ConstInt &c, const Node &n, const Kernel &) {
    if (n.type == Type{DType::Int64, 1})
      return fmt::format("{}", c.value);
    return fmt::format("{}:{}", c.value, typeString(n.type));
  }
  std::string exprOp(const ConstFloat &c, const Node &n, const Kernel &) {
    if (n.type == Type{DType::Float32, 1})
      return floatText(c.value);
    return fmt::format("{}:{}", floatText(c.value), typeString(n.type));
  }
  std::string exprOp(const Undef &, const Node &n, const Kernel &) {
    return fmt::format("undef<{}>", typeString(n.type));
  }
  std::string exprOp(const ParamRef &p, const Node &, const Kernel &k) {
    return paramName(p.index, k);
  }
  std::string exprOp(const SpecialReg &s, const Node &, const Kernel &) {
    return std::string(names::special(s.reg));
  }
  std::string exprOp(const VarRef &v, const Node &, const Kernel &) {
    return fmt::format("v{}", v.id);
  }
  std::string exprOp(const Unary &u, const Node &, const Kernel &k) {
    return fmt::format("{}({})", names::unOp(u.op), expr(u.a, k));
  }
  std::string exprOp(const Binary &b, const Node &, const Kernel &k) {
    std::string_view infix = names::binOpInfix(b.op);
    if (!infix.empty())
      return fmt::format("({} {} {})", expr(b.a, k), infix, expr(b.b, k));
    return fmt::format("{}({}, {})", names::binOpCall(b.op), expr(b.a, k), expr(b.b, k));
  }
  std::string exprOp(const Select &s, const Node &, const Kernel &k) {
    return fmt::format("select({}, {}, {})", expr(s.cond, k), expr(s.a, k), expr(s.b, k));
  }
  std::string exprOp(const Cast &c, const Node &n, const Kernel &k) {
    return fmt::format("cast<{}>({})", typeString(n.type), expr(c.a, k));
  }
  std::string exprOp(const Broadcast &b, const Node &n, const Kernel &k) {
    return fmt::format("broadcast<{}>({})", typeString(n.type), expr(b.a, k));
  }
  std::string exprOp(const GlobalLoad &l, const Node &n, const Kernel &k) {
    return fmt::format("load<{}>({}[{}], align {})", typeString(n.type), paramName(l.param, k),
                       expr(l.index, k), l.alignBytes);
  }

  std::string exprOp(const ExtractLane &e, const Node &, const Kernel &k) {
    return fmt::format("{}[lane {}]", expr(e.vec, k), e.lane);
  }
  std::string exprOp(const MakeVector &m, const Node &n, const Kernel &k) {
    std::string elems;
    for (const Expr &e : m.elems)
      elems += (elems.empty() ? "" : ", ") + expr(e, k);
    return fmt::format("vector<{}>({})", typeString(n.type), elems);
  }
  std::string exprOp(const Shfl &s, const Node &, const Kernel &k) {
    return fmt::format("shfl.{}({}, {})", shflModeName(s.mode), expr(s.value, k), expr(s.arg, k));
  }
  std::string exprOp(const ShflXor &s, const Node &, const Kernel &k) {
    return fmt::format("shfl_xor({}, {})", expr(s.value, k), s.laneMask);
  }
  std::string exprOp(const SharedLoad &l, const Node &n, const Kernel &k) {
    return fmt::format("smem<{}>[{}{}]", typeString(n.type), expr(l.byteOffset, k),
                       regionSuffix(l.region));
  }

  std::string exprOp(const LdMatrix &l, const Node &, const Kernel &k) {
    return fmt::format("ldmatrix.x{}{}(smem[{}{}])", l.num, l.trans ? ".trans" : "",
                       expr(l.byteOffset, k), regionSuffix(l.region));
  }
  std::string exprOp(const MmaSync &m, const Node &, const Kernel &k) {
    return fmt::format("mma.m16n8k16.{}({}, {}, {})", dtypeName(m.inputType), expr(m.a, k),
                       expr(m.b, k), expr(m.c, k));
  }
  std::string exprOp(const Mfma &m, const Node &, const Kernel &k) {
    return fmt::format("mfma.m{}n{}k{}.{}({}, {}, {})", m.m, m.n, m.k, dtypeName(m.inputType),
                       expr(m.a, k), expr(m.b, k), expr(m.c, k));
  }
  std::string exprOp(const Bitcast &b, const Node &n, const Kernel &k) {
    return fmt::format("bitcast<{}>({})", typeString(n.type), expr(b.a, k));
  }
  std::string exprOp(const SharedAddress &a, const Node &, const Kernel &k) {
    return fmt::format("smem_address({})", expr(a.byteOffset, k));
  }
  std::string exprOp(const Wgmma &w, const Node &, const Kernel &k) {
    std::string s =
        fmt::format("wgmma.m64n{}k{}.{}{}{}{}{}{}({}", w.n, w.k(), dtypeName(w.inputType),
                    w.bInputType ? "." + std::string(dtypeName(*w.bInputType)) : "",
                    w.aInRegisters ? ".rs" : "", w.aMnMajor ? ".a_mn_major" : "",
                    w.bMnMajor ? ".b_mn_major" : "", turnSuffix(w.turn), expr(w.acc, k));
    if (w.clearAcc)
      s += fmt::format(", [clear if {}]", expr(w.clearAcc, k));
    if (w.active)
      s += fmt::format(", [issue if {}]", expr(w.active, k));
    for (const WgmmaInstr &i : w.instrs)
      s += fmt::format(", [acc {}: {}, {}]", i.accFirst, expr(i.a, k), expr(i.bDesc, k));
    for (const SmemRegion &r : w.reads)
      s += regionSuffix(r);
    return s + ")";
  }
};

} // namespace

std::string typeString(Type t) {
  if (t.lanes == 1)
    return std::string(dtypeName(t.elem));
  return fmt::format("{}x{}", dtypeName(t.elem), t.lanes);
}

bool isLeaf(const Node &n) {
  return std::holds_alternative<ConstInt>(n.op) || std::holds_alternative<ConstFloat>(n.op) ||
         std::holds_alternative<Undef>(n.op) || std::holds_alternative<ParamRef>(n.op) ||
         std::holds_alternative<SpecialReg>(n.op) || std::holds_alternative<VarRef>(n.op);
}

Expr constInt(int64_t v, DType t) {
  if (!isInteger(t) && t != DType::Bool)
    misuse(fmt::format("constInt of non-integer type {}", dtypeName(t)));
  return make({t, 1}, ConstInt{v});
}

Expr constFloat(double v, DType t) {
  if (!isFloat(t))
    misuse(fmt::format("constFloat of non-float type {}", dtypeName(t)));
  return make({t, 1}, ConstFloat{v});
}

Expr undef(Type t) { return make(t, Undef{}); }

Expr param(int index, DType t) {
  if (index < 0)
    misuse("param with negative index");
  return make({t, 1}, ParamRef{index});
}

Expr special(Special s) { return make({DType::Int32, 1}, SpecialReg{s}); }

Expr var(int id, Type t) {
  if (id < 0 || t.lanes < 1)
    misuse("var with negative id or lanes < 1");
  return make(t, VarRef{id});
}

Expr unary(UnOp op, Expr a) {
  requireExpr(a, "unary");
  DType t = a->type.elem;
  if (op == UnOp::Not && isFloat(t))
    misuse("not on a float");
  if (t == DType::Bool && op != UnOp::Not)
    misuse(fmt::format("{} on bool", names::unOp(op)));
  if (isMathOp(op) && !isFloat(t))
    misuse(fmt::format("{} on non-float type {}", names::unOp(op), dtypeName(t)));
  if (op == UnOp::BitNot && !isInteger(t))
    misuse(fmt::format("bitnot on non-integer type {}", dtypeName(t)));
  Type type = a->type;
  return make(type, Unary{op, std::move(a)});
}

Expr binary(BinOp op, Expr a, Expr b) {
  requireExpr(a, "binary");
  requireExpr(b, "binary");
  if (!(a->type == b->type))
    misuse(fmt::format("binary operands of different types {} and {}", typeString(a->type),
                       typeString(b->type)));
  DType t = a->type.elem;
  bool logical = op == BinOp::And || op == BinOp::Or;
  if (logical && t != DType::Bool)
    misuse("and/or on non-bool operands");
  if (!logical && !isComparison(op) && t == DType::Bool)
    misuse("arithmetic on bool operands");
  if (op >= BinOp::BitAnd && !isInteger(t))
    misuse("bitwise operation on non-integer operands");
  Type result = isComparison(op) ? Type{DType::Bool, a->type.lanes} : a->type;
  return make(result, Binary{op, std::move(a), std::move(b)});
}

Expr select(Expr c, Expr a, Expr b) {
  requireExpr(c, "select");
  requireExpr(a, "select");
  requireExpr(b, "select");
  if (c->type.elem != DType::Bool)
    misuse("select condition is not bool");
  if (!(a->type == b->type))
    misuse("select arms of different types");
  if (c->type.lanes != 1 && c->type.lanes != a->type.lanes)
    misuse("select condition lanes differ from the arms'");
  Type type = a->type;
  return make(type, Select{std::move(c), std::move(a), std::move(b)});
}

Expr cast(Expr a, Type t) {
  requireExpr(a, "cast");
  if (a->type == t)
    return a;
  if (a->type.lanes != t.lanes)
    misuse("cast changes the lane count (use broadcast)");
  return make(t, Cast{std::move(a)});
}

Expr broadcast(Expr a, int lanes) {
  requireExpr(a, "broadcast");
  if (a->type.lanes != 1 || lanes < 1)
    misuse("broadcast of a vector or to fewer than one lane");
  if (lanes == 1)
    return a;
  Type t{a->type.elem, lanes};
  return make(t, Broadcast{std::move(a)});
}

Expr globalLoad(int param, Expr index, Type t, int alignBytes) {
  requireExpr(index, "globalLoad");
  if (!(index->type == Type{DType::Int64, 1}))
    misuse("globalLoad index is not a scalar int64");
  if (!isPowerOfTwo(alignBytes))
    misuse("globalLoad alignment is not a power of two");
  if (param < 0 || t.lanes < 1)
    misuse("globalLoad with negative param or lanes < 1");
  return make(t, GlobalLoad{param, std::move(index), alignBytes});
}

Expr extractLane(Expr vec, int lane) {
  requireExpr(vec, "extractLane");
  if (lane < 0 || lane >= vec->type.lanes)
    misuse("extractLane lane out of range");
  Type t{vec->type.elem, 1};
  return make(t, ExtractLane{std::move(vec), lane});
}

Expr makeVector(std::vector<Expr> elems) {
  if (elems.empty())
    misuse("makeVector of no elements");
  for (const Expr &e : elems) {
    requireExpr(e, "makeVector");
    if (!(e->type == Type{elems[0]->type.elem, 1}))
      misuse("makeVector elements of different or vector types");
  }
  if (elems.size() == 1)
    return elems[0];
  Type t{elems[0]->type.elem, static_cast<int>(elems.size())};
  return make(t, MakeVector{std::move(elems)});
}

Expr shflXor(Expr value, int laneMask) {
  requireExpr(value, "shflXor");
  const int bits = dtypeBits(value->type.elem);
  if (value->type.lanes != 1 || (bits != 32 && bits != 64))
    misuse("shflXor of a value that is not a 32- or 64-bit scalar");
  // 32..63 exchange between the halves of a 64-lane AMD wavefront.
  if (laneMask < 0 || laneMask > 63)
    misuse("shflXor lane mask out of range");
  Type t = value->type;
  return make(t, ShflXor{std::move(value), laneMask});
}

Expr shfl(ShflMode mode, Expr value, Expr arg) {
  requireExpr(value, "shfl");
  requireExpr(arg, "shfl");
  if (value->type.lanes != 1 || dtypeBits(value->type.elem) != 32)
    misuse("shfl of a non-32-bit or vector value");
  if (!(arg->type == Type{DType::Int32}))
    misuse("shfl lane argument not int32");
  Type t = value->type;
  return make(t, Shfl{mode, std::move(value), std::move(arg)});
}

const char *shflModeName(ShflMode m) {
  switch (m) {
  case ShflMode::Xor:
    return "xor";
  case ShflMode::Down:
    return "down";
  case ShflMode::Up:
    return "up";
  case ShflMode::Idx:
    return "idx";
  }
  return "?";
}

Expr sharedLoad(Expr byteOffset, Type t, std::optional<SmemRegion> region) {
  requireExpr(byteOffset, "sharedLoad");
  if (!(byteOffset->type == Type{DType::Int32, 1}) || t.lanes < 1)
    misuse("sharedLoad offset not int32");
  return make(t, SharedLoad{std::move(byteOffset), region});
}

Expr ldMatrix(Expr byteOffset, int num, bool trans, std::optional<SmemRegion> region) {
  requireExpr(byteOffset, "ldMatrix");
  if (!(byteOffset->type == Type{DType::Int32, 1}) || (num != 1 && num != 2 && num != 4))
    misuse("ldMatrix offset not int32 or num not 1, 2, 4");
  return make({DType::Int32, num}, LdMatrix{std::move(byteOffset), num, trans, region});
}

std::string turnSuffix(const Wgmma::Turn &turn) {
  if (turn.barrier < 0)
    return "";
  return fmt::format(".turn{}{}",
                     turn.wait && turn.pass ? ""
                     : turn.wait            ? "wait"
                                            : "pass",
                     turn.barrier);
}

std::string regionSuffix(const std::optional<SmemRegion> &region) {
  return region ? fmt::format("; {}, {}", region->begin, region->end) : std::string();
}

Expr mmaSync(Expr a, Expr b, Expr c, DType inputType) {
  requireExpr(a, "mmaSync");
  requireExpr(b, "mmaSync");
  requireExpr(c, "mmaSync");
  if (!(a->type == Type{DType::Int32, 4}) || !(b->type == Type{DType::Int32, 2}) ||
      !(c->type == Type{DType::Float32, 4}) ||
      (inputType != DType::Float16 && inputType != DType::BFloat16))
    misuse("mmaSync operand types");
  return make({DType::Float32, 4}, MmaSync{std::move(a), std::move(b), std::move(c), inputType});
}

Expr mfma(Expr a, Expr b, Expr c, int m, int n, int k, DType inputType) {
  requireExpr(a, "mfma");
  requireExpr(b, "mfma");
  requireExpr(c, "mfma");
  bool shape = (m == 32 && n == 32 && k == 8) || (m == 16 && n == 16 && k == 16);
  if (!shape || (inputType != DType::Float16 && inputType != DType::BFloat16) ||
      !(a->type == Type{inputType, 4}) || !(b->type == Type{inputType, 4}) ||
      !(c->type == Type{DType::Float32, m * n / 64}))
    misuse("mfma operand types or shape");
  Type t = c->type;
  return make(t, Mfma{std::move(a), std::move(b), std::move(c), m, n, k, inputType});
}

Expr sharedAddress(Expr byteOffset) {
  requireExpr(byteOffset, "sharedAddress");
  if (!(byteOffset->type == Type{DType::Int32, 1}))
    misuse("sharedAddress offset not int32");
  return make({DType::Int32, 1}, SharedAddress{std::move(byteOffset)});
}

bool hasFloat64(UnOp op) {
  switch (op) {
  case UnOp::Neg:
  case UnOp::Not:
  case UnOp::BitNot:
  case UnOp::Abs:
  case UnOp::Sqrt:
  case UnOp::Rsqrt:
  case UnOp::Floor:
  case UnOp::Ceil:
    return true;
  default:
    return false;
  }
}

bool wgmmaTypes(DType a, DType b) {
  if (isFloat8(a) || isFloat8(b))
    return isFloat8(a) && isFloat8(b);
  return a == b && (a == DType::Float16 || a == DType::BFloat16);
}

bool clearsWholeLanes(const std::vector<WgmmaInstr> &instrs, int n, int lanes) {
  std::vector<bool> written(static_cast<size_t>(std::max(lanes, 0)));
  for (const WgmmaInstr &i : instrs) {
    int fresh = 0, old = 0;
    for (int l = std::max(i.accFirst, 0); l < i.accFirst + n / 2 && l < lanes; ++l) {
      (written[static_cast<size_t>(l)] ? old : fresh)++;
      written[static_cast<size_t>(l)] = true;
    }
    if (fresh && old)
      return false;
  }
  return std::all_of(written.begin(), written.end(), [](bool w) { return w; });
}

Expr wgmma(Expr acc, std::vector<WgmmaInstr> instrs, int n, DType inputType, bool aInRegisters,
           bool aMnMajor, bool bMnMajor, int pending, std::optional<DType> bInputType,
           Wgmma::Turn turn, std::vector<SmemRegion> reads, Expr clearAcc, Expr active) {
  requireExpr(acc, "wgmma");
  if (clearAcc && !(clearAcc->type == Type{DType::Bool, 1}))
    misuse("wgmma clear condition not bool");
  if (active && !(active->type == Type{DType::Bool, 1}))
    misuse("wgmma activity condition not bool");
  if (active && turn.barrier >= 0)
    misuse("wgmma with an issue condition and a turn");
  for (const SmemRegion &r : reads)
    if (r.begin < 0 || r.end <= r.begin)
      misuse("wgmma read region");
  if (pending < 0 || pending > 7)
    misuse("wgmma pending group count");
  if (turn.barrier < -1 || turn.barrier > 14 || (turn.barrier >= 0) != (turn.wait || turn.pass))
    misuse("wgmma turn");
  if (bInputType == inputType)
    bInputType.reset(); // one spelling of each instruction
  if (acc->type.elem != DType::Float32 || n < 8 || n > 256 || n % 8 != 0 || instrs.empty() ||
      !wgmmaTypes(inputType, bInputType.value_or(inputType)) || (aInRegisters && aMnMajor) ||
      (isFloat8(inputType) && (aMnMajor || bMnMajor)))
    misuse("wgmma shape or types");
  for (const WgmmaInstr &i : instrs) {
    requireExpr(i.a, "wgmma");
    requireExpr(i.bDesc, "wgmma");
    Type aType = aInRegisters ? Type{DType::Int32, 4} : Type{DType::Int64, 1};
    if (!(i.a->type == aType) || !(i.bDesc->type == Type{DType::Int64, 1}) || i.accFirst < 0 ||
        i.accFirst + n / 2 > acc->type.lanes)
      misuse("wgmma instruction operands");
  }
  Type t = acc->type;
  if (clearAcc && !clearsWholeLanes(instrs, n, acc->type.lanes))
    misuse("wgmma that clears its accumulators without writing every lane, each only once new");
  return make(t, Wgmma{std::move(acc), std::move(clearAcc), std::move(instrs), n, inputType,
                       aInRegisters, aMnMajor, bMnMajor, pending, turn, bInputType,
                       std::move(reads), std::move(active)});
}

Expr bitcast(Expr a, Type t) {
  requireExpr(a, "bitcast");
  if (dtypeBits(a->type.elem) * a->type.lanes != dtypeBits(t.elem) * t.lanes)
    misuse("bitcast between types of different widths");
  if (a->type == t)
    return a;
  return make(t, Bitcast{std::move(a)});
}

std::string printExpr(const Expr &e, const Kernel &k) { return TreePrinter().expr(e, k); }

namespace {

bool collectHeldBarriers(const Body &body, bool held, std::vector<const Stmt *> &out) {
  for (const Stmt &st : body) {
    auto *d = std::get_if<DeclVar>(&st.op);
    const Wgmma *w = d && d->init ? std::get_if<Wgmma>(&d->init->op) : nullptr;
    if (auto *t = std::get_if<WarpgroupTurn>(&st.op))
      held = !t->pass;
    else if (w && w->turn.barrier >= 0)
      held = w->turn.wait && !w->turn.pass ? true : w->turn.pass ? false : held;
    else if (std::holds_alternative<Barrier>(st.op) && held)
      out.push_back(&st);
    else if (auto *f = std::get_if<ForStmt>(&st.op)) {
      // The second walk sees the turn the first left held; report its barriers once.
      std::vector<const Stmt *> again;
      held = collectHeldBarriers(f->body, collectHeldBarriers(f->body, held, out), again);
      for (const Stmt *b : again)
        if (std::find(out.begin(), out.end(), b) == out.end())
          out.push_back(b);
    } else if (auto *i = std::get_if<IfStmt>(&st.op)) {
      // A branch's turns are the first warpgroup's last wait or the second's first pass.
      collectHeldBarriers(i->then, held, out);
      collectHeldBarriers(i->otherwise, held, out);
    }
  }
  return held;
}

} // namespace

std::vector<const Stmt *> barriersInHeldTurns(const Kernel &k) {
  std::vector<const Stmt *> out;
  collectHeldBarriers(k.body, false, out);
  return out;
}

int64_t persistentLaunchBlocks(int64_t blocks, int64_t resident, int64_t gridX, bool balanceX) {
  int64_t g = std::min(blocks, resident);
  // With every block launched there is nothing to balance: each walks one tile.
  if (!balanceX || g >= blocks || gridX <= 1)
    return g;
  while (g > 1 && std::gcd(g, gridX) != 1)
    --g;
  return g;
}

} // namespace tilec::thir
