#include "threadir/Interpreter.h"

#include "threadir/InterpreterBlock.h"
#include "threadir/InterpreterValue.h"

#include "analysis/MfmaLayout.h"
#include "support/IntMath.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <cstring>
#include <deque>
#include <functional>
#include <stdexcept>
#include <unordered_map>

namespace tilec::thir {

namespace {

using namespace interp;

int maxVarOf(const Body &body) {
  int maxVar = 0;
  for (const Stmt &s : body) {
    if (auto *d = std::get_if<DeclVar>(&s.op))
      maxVar = std::max(maxVar, d->id);
    if (auto *f = std::get_if<ForStmt>(&s.op))
      maxVar = std::max({maxVar, f->var, maxVarOf(f->body)});
    if (auto *i = std::get_if<IfStmt>(&s.op))
      maxVar = std::max({maxVar, maxVarOf(i->then), maxVarOf(i->otherwise)});
  }
  return maxVar;
}

/// What a launch gives every block: the kernel, its arguments, the tensor maps it encoded.
struct LaunchState {
  const Kernel &kernel;
  const InterpreterLaunch &launch;
  std::vector<double> scalars;     // by parameter, TmaEnabled's as the launch set it
  std::vector<TensorMapView> maps; // by parameter (TensorMap ones)
};

/// One warp of a block (a 64-lane wavefront on AMD), its threads in lockstep: each statement
/// runs for every active thread before the next; branches and loops mask threads off. Lane
/// exchanges, mfma, ldmatrix and mma.sync see the whole warp at once.
class Warp {
public:
  Warp(const LaunchState &s, Block &b, int index, int maxVar)
      : k_(s.kernel), l_(s.launch), s_(s), b_(b), index_(index), first_(index * s.launch.warpSize),
        count_(std::min(s.launch.warpSize, s.kernel.threads - first_)),
        vars_(static_cast<size_t>(count_), std::vector<Val>(static_cast<size_t>(maxVar) + 1)) {}

  void run() {
    clearCache();
    exec(k_.body, Mask(static_cast<size_t>(count_), 1));
  }
  int threads() const { return count_; }

  /// A grid or scalar expression of the launch (no thread state).
  int64_t host(const Expr &e) {
    Mask one(static_cast<size_t>(count_), 0);
    one[0] = 1;
    Val v = eval(e, one)[0];
    clearCache();
    return floating(v.type.elem) ? static_cast<int64_t>(toDouble(v.bits[0], v.type.elem))
                                 : toInt(v.bits[0], v.type.elem);
  }

private:
  using Mask = std::vector<char>;
  using Vals = std::vector<Val>;

  std::vector<uint8_t> &tensor(int param, int64_t firstByte, int64_t bytes) {
    if (param < 0 || static_cast<size_t>(param) >= l_.tensors.size() || !l_.tensors[param])
      throw Stop(fmt::format("parameter {} has no tensor", param));
    std::vector<uint8_t> &t = *l_.tensors[param];
    if (firstByte < 0 || firstByte + bytes > static_cast<int64_t>(t.size()))
      throw Stop(fmt::format("access of bytes [{}, {}) of tensor '{}' ({} bytes)", firstByte,
                             firstByte + bytes, k_.params[param].name, t.size()));
    return t;
  }
  /// `bytes` of shared memory at `offset` that this warp reads.
  uint8_t *shared(int64_t offset, int64_t bytes) {
    uint8_t *p = b_.shared().at(offset, bytes);
    b_.checkRead(index_, offset, bytes);
    return p;
  }
  /// The values of `e` in the active threads of `m` (the others' are stale), computed once
  /// per statement.
  const Vals &eval(const Expr &e, const Mask &m) {
    if (auto it = cache_.find(e.get()); it != cache_.end())
      return *it->second;
    if (e->type.lanes > 256)
      throw Stop(fmt::format("a vector of {} lanes", e->type.lanes));
    if (used_ == pool_.size())
      pool_.emplace_back(m.size());
    Vals &out = pool_[used_++];
    std::visit([&](const auto &op) { evalOp(op, *e, m, out); }, e->op);
    cache_.emplace(e.get(), &out);
    return out;
  }
  /// A new statement: no value is computed yet (the pool's vectors are reused).
  void clearCache() {
    cache_.clear();
    used_ = 0;
  }

  template <class F> void perThread(const Mask &m, Vals &out, F f) {
    for (size_t t = 0; t < m.size(); ++t)
      if (m[t])
        out[t] = f(static_cast<int>(t));
  }

  void evalOp(const ConstInt &c, const Node &n, const Mask &m, Vals &out) {
    Val v =
        splat(n.type, floating(n.type.elem) ? fromDouble(static_cast<double>(c.value), n.type.elem)
                                            : fromInt(c.value, n.type.elem));
    perThread(m, out, [&](int) { return v; });
  }
  void evalOp(const ConstFloat &c, const Node &n, const Mask &m, Vals &out) {
    Val v = splat(n.type, fromDouble(c.value, n.type.elem));
    perThread(m, out, [&](int) { return v; });
  }
  // Nothing reads it as a value: zeros, as good as any.
  void evalOp(const Undef &, const Node &n, const Mask &m, Vals &out) {
    Val v = splat(n.type,
                  floating(n.type.elem) ? fromDouble(0.0, n.type.elem) : fromInt(0, n.type.elem));
    perThread(m, out, [&](int) { return v; });
  }
  void evalOp(const ParamRef &p, const Node &n, const Mask &m, Vals &out) {
    if (p.index < 0 || static_cast<size_t>(p.index) >= s_.scalars.size())
      throw Stop(fmt::format("no value for parameter {}", p.index));
    double x = s_.scalars[static_cast<size_t>(p.index)];
    Val v = splat(n.type, floating(n.type.elem) ? fromDouble(x, n.type.elem)
                                                : fromInt(static_cast<int64_t>(x), n.type.elem));
    perThread(m, out, [&](int) { return v; });
  }
  void evalOp(const SpecialReg &s, const Node &n, const Mask &m, Vals &out) {
    perThread(m, out, [&](int t) {
      int64_t x = 0;
      switch (s.reg) {
      case Special::ThreadIdxX:
        x = first_ + t;
        break;
      case Special::BlockIdxX:
      case Special::BlockIdxY:
      case Special::BlockIdxZ:
        x = b_.index[static_cast<size_t>(s.reg) - static_cast<size_t>(Special::BlockIdxX)];
        break;
      case Special::GridDimX:
      case Special::GridDimY:
      case Special::GridDimZ:
        x = b_.grid[static_cast<size_t>(s.reg) - static_cast<size_t>(Special::GridDimX)];
        break;
      }
      return splat(n.type, fromInt(x, n.type.elem));
    });
  }
  void evalOp(const VarRef &r, const Node &, const Mask &m, Vals &out) {
    perThread(m, out, [&](int t) { return vars_[t].at(static_cast<size_t>(r.id)); });
  }
  void evalOp(const Unary &u, const Node &n, const Mask &m, Vals &out) {
    const Vals &a = eval(u.a, m);
    perThread(m, out, [&](int th) {
      Val v(n.type);
      for (int i = 0; i < n.type.lanes; ++i)
        v.bits[i] = unary(u.op, a[th].bits[i], n.type.elem);
      return v;
    });
  }
  void evalOp(const Binary &b, const Node &n, const Mask &m, Vals &out) {
    const Vals &x = eval(b.a, m);
    const Vals &y = eval(b.b, m);
    DType t = b.a->type.elem;
    perThread(m, out, [&](int th) {
      Val v(n.type);
      for (int i = 0; i < n.type.lanes; ++i)
        v.bits[i] = binary(b.op, x[th].bits[i], y[th].bits[i], t, n.type.elem);
      return v;
    });
  }
  void evalOp(const Select &s, const Node &n, const Mask &m, Vals &out) {
    const Vals &c = eval(s.cond, m);
    const Vals &a = eval(s.a, m);
    const Vals &b = eval(s.b, m);
    perThread(m, out, [&](int t) {
      Val v(n.type);
      for (int i = 0; i < n.type.lanes; ++i)
        v.bits[i] = c[t].bits[s.cond->type.lanes > 1 ? i : 0] ? a[t].bits[i] : b[t].bits[i];
      return v;
    });
  }
  void evalOp(const Cast &c, const Node &n, const Mask &m, Vals &out) {
    const Vals &a = eval(c.a, m);
    perThread(m, out, [&](int t) {
      Val v(n.type);
      for (int i = 0; i < n.type.lanes; ++i)
        v.bits[i] = castBits(a[t].bits[i], c.a->type.elem, n.type.elem);
      return v;
    });
  }
  void evalOp(const Broadcast &b, const Node &n, const Mask &m, Vals &out) {
    const Vals &a = eval(b.a, m);
    perThread(m, out, [&](int t) { return splat(n.type, a[t].bits[0]); });
  }
  void evalOp(const GlobalLoad &g, const Node &n, const Mask &m, Vals &out) {
    const Vals &idx = eval(g.index, m);
    int64_t eb = widthBits(n.type.elem) / 8;
    perThread(m, out, [&](int t) {
      int64_t first = scalarInt(idx[t]) * eb, bytes = eb * n.type.lanes;
      Val v(n.type);
      readLanes(v, tensor(g.param, first, bytes).data() + first);
      return v;
    });
  }
  void evalOp(const ExtractLane &x, const Node &n, const Mask &m, Vals &out) {
    const Vals &a = eval(x.vec, m);
    perThread(m, out, [&](int t) { return splat(n.type, a[t].bits[x.lane]); });
  }
  void evalOp(const MakeVector &mv, const Node &n, const Mask &m, Vals &out) {
    std::vector<const Vals *> parts;
    for (const Expr &e : mv.elems)
      parts.push_back(&eval(e, m));
    perThread(m, out, [&](int t) {
      Val v(n.type);
      for (size_t i = 0; i < parts.size(); ++i)
        v.bits[i] = (*parts[i])[t].bits[0];
      return v;
    });
  }
  /// The value of `src` lane of the warp of `t`, or `t`'s own where that lane is outside the
  /// warp or the block.
  void exchange(const Mask &m, const Vals &v, Vals &out, const std::function<int64_t(int)> &src) {
    int w = l_.warpSize;
    perThread(m, out, [&](int t) {
      int64_t lane = src(t);
      int64_t from = t / w * w + lane;
      if (lane < 0 || lane >= w || from >= count_)
        return v[t];
      if (!m[from])
        throw Stop("a lane exchange with an inactive lane");
      return v[from];
    });
  }
  void evalOp(const ShflXor &s, const Node &, const Mask &m, Vals &out) {
    const Vals &v = eval(s.value, m);
    exchange(m, v, out, [&](int t) { return (t % l_.warpSize) ^ s.laneMask; });
  }
  void evalOp(const Shfl &s, const Node &, const Mask &m, Vals &out) {
    const Vals &v = eval(s.value, m);
    const Vals &a = eval(s.arg, m);
    exchange(m, v, out, [&](int t) {
      int64_t lane = t % l_.warpSize, x = scalarInt(a[t]);
      switch (s.mode) {
      case ShflMode::Xor:
        return lane ^ x;
      case ShflMode::Down:
        return lane + x;
      case ShflMode::Up:
        return lane - x;
      case ShflMode::Idx:
        return x;
      }
      return lane;
    });
  }
  void evalOp(const SharedLoad &s, const Node &n, const Mask &m, Vals &out) {
    const Vals &off = eval(s.byteOffset, m);
    perThread(m, out, [&](int t) {
      Val v(n.type);
      readLanes(v, shared(scalarInt(off[t]), widthBits(n.type.elem) / 8 * n.type.lanes));
      return v;
    });
  }
  void evalOp(const Bitcast &b, const Node &n, const Mask &m, Vals &out) {
    const Vals &a = eval(b.a, m);
    perThread(m, out, [&](int t) {
      uint8_t bytes[2048] = {};
      writeLanes(a[t], bytes);
      Val v(n.type);
      readLanes(v, bytes);
      return v;
    });
  }
  /// One v_mfma per wavefront: every lane's items placed by the documented layouts
  /// (analysis/MfmaLayout.h), D = A B + C with exact products summed in double.
  void evalOp(const Mfma &f, const Node &n, const Mask &m, Vals &out) {
    const Vals &a = eval(f.a, m);
    const Vals &b = eval(f.b, m);
    const Vals &c = eval(f.c, m);
    target::MmaShape shape{f.m, f.n, f.k, f.inputType};
    using analysis::MfmaOperand;
    for (int w0 = 0; w0 < count_; w0 += 64) {
      std::vector<double> A(static_cast<size_t>(f.m * f.k)), B(static_cast<size_t>(f.k * f.n)),
          D(static_cast<size_t>(f.m * f.n));
      for (int lane = 0; lane < 64; ++lane) {
        int t = w0 + lane;
        if (t >= count_ || !m[t])
          throw Stop("mfma with an inactive lane");
        for (int64_t i = 0; i < analysis::mfmaItems(shape, MfmaOperand::A); ++i) {
          auto e = analysis::mfmaElement(shape, MfmaOperand::A, lane, i);
          A[e.row * f.k + e.col] = toDouble(a[t].bits[i], f.inputType);
        }
        for (int64_t i = 0; i < analysis::mfmaItems(shape, MfmaOperand::B); ++i) {
          auto e = analysis::mfmaElement(shape, MfmaOperand::B, lane, i);
          B[e.row * f.n + e.col] = toDouble(b[t].bits[i], f.inputType);
        }
        for (int64_t i = 0; i < analysis::mfmaItems(shape, MfmaOperand::Accumulator); ++i) {
          auto e = analysis::mfmaElement(shape, MfmaOperand::Accumulator, lane, i);
          D[e.row * f.n + e.col] = toDouble(c[t].bits[i], DType::Float32);
        }
      }
      for (int i = 0; i < f.m; ++i)
        for (int j = 0; j < f.n; ++j)
          for (int kk = 0; kk < f.k; ++kk)
            D[i * f.n + j] += A[i * f.k + kk] * B[kk * f.n + j];
      for (int lane = 0; lane < 64; ++lane) {
        Val v(n.type);
        for (int64_t i = 0; i < analysis::mfmaItems(shape, MfmaOperand::Accumulator); ++i) {
          auto e = analysis::mfmaElement(shape, MfmaOperand::Accumulator, lane, i);
          v.bits[i] = fromDouble(D[e.row * f.n + e.col], DType::Float32);
        }
        out[w0 + lane] = v;
      }
    }
  }
  /// ldmatrix m8n8.x{num}: lanes 8j .. 8j + 7 of a warp name the rows of matrix j; lane l gets
  /// from each matrix row l / 4, columns 2 (l % 4) and + 1 (with .trans: rows 2 (l % 4) and + 1
  /// of column l / 4), the lower column (row) in the low half of its register (PTX ISA,
  /// "Warp-level matrix load instruction: ldmatrix").
  void evalOp(const LdMatrix &ld, const Node &n, const Mask &m, Vals &out) {
    const Vals &off = eval(ld.byteOffset, m);
    const int w = l_.warpSize;
    for (int w0 = 0; w0 < count_; w0 += w) {
      for (int lane = 0; lane < w; ++lane)
        if (w0 + lane >= count_ || !m[w0 + lane])
          throw Stop("ldmatrix with an inactive lane");
      auto element = [&](int j, int row, int col) {
        const uint8_t *p = shared(scalarInt(off[w0 + 8 * j + row]) + 2 * col, 2);
        return uint64_t{p[0]} | uint64_t{p[1]} << 8;
      };
      for (int lane = 0; lane < w; ++lane) {
        Val v(n.type);
        for (int j = 0; j < ld.num; ++j) {
          const int a = lane / 4, b = 2 * (lane % 4);
          uint64_t lo = ld.trans ? element(j, b, a) : element(j, a, b);
          uint64_t hi = ld.trans ? element(j, b + 1, a) : element(j, a, b + 1);
          v.bits[j] = lo | hi << 16;
        }
        out[w0 + lane] = v;
      }
    }
  }
  /// mma.sync m16n8k16 of one warp, lane l = 4 g + t: A's registers hold (g, 2t), (g + 8, 2t),
  /// (g, 2t + 8), (g + 8, 2t + 8) and the next column of each; B's (2t, g), (2t + 8, g) and the
  /// next row; C's (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1) (PTX ISA, "Matrix
  /// Fragments for mma.m16n8k16"). D = A B + C with exact products summed in double.
  void evalOp(const MmaSync &op, const Node &n, const Mask &m, Vals &out) {
    const Vals &a = eval(op.a, m);
    const Vals &b = eval(op.b, m);
    const Vals &c = eval(op.c, m);
    const int w = l_.warpSize;
    auto half = [&](uint64_t reg, int h) {
      return toDouble((reg >> (16 * h)) & 0xFFFF, op.inputType);
    };
    for (int w0 = 0; w0 < count_; w0 += w) {
      double A[16][16], B[16][8], D[16][8];
      for (int lane = 0; lane < w; ++lane) {
        const int t = w0 + lane, g = lane / 4, q = lane % 4;
        if (t >= count_ || !m[t])
          throw Stop("mma.sync with an inactive lane");
        for (int r = 0; r < 4; ++r)
          for (int h = 0; h < 2; ++h)
            A[g + 8 * (r % 2)][2 * q + h + 8 * (r / 2)] = half(a[t].bits[r], h);
        for (int r = 0; r < 2; ++r)
          for (int h = 0; h < 2; ++h)
            B[2 * q + h + 8 * r][g] = half(b[t].bits[r], h);
        for (int i = 0; i < 4; ++i)
          D[g + 8 * (i / 2)][2 * q + i % 2] = toDouble(c[t].bits[i], DType::Float32);
      }
      for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 8; ++j)
          for (int kk = 0; kk < 16; ++kk)
            D[i][j] += A[i][kk] * B[kk][j];
      for (int lane = 0; lane < w; ++lane) {
        const int g = lane / 4, q = lane % 4;
        Val v(n.type);
        for (int i = 0; i < 4; ++i)
          v.bits[i] = fromDouble(D[g + 8 * (i / 2)][2 * q + i % 2], DType::Float32);
        out[w0 + lane] = v;
      }
    }
  }
  void evalOp(const SharedAddress &a, const Node &n, const Mask &m, Vals &out) {
    const Vals &off = eval(a.byteOffset, m);
    perThread(m, out, [&](int t) {
      return splat(n.type, fromInt(kSharedWindowBase + scalarInt(off[t]), n.type.elem));
    });
  }
  /// A wgmma group: each of the warpgroup's four warps brings its threads' operands, and the
  /// last to come runs the group for all of them (wgmma is .sync.aligned: every thread).
  void evalOp(const Wgmma &w, const Node &n, const Mask &m, Vals &out) {
    if (count_ != 32 || std::find(m.begin(), m.end(), 0) != m.end())
      throw Stop("a wgmma in a warp with inactive threads");
    const Vals &acc = eval(w.acc, m);
    if (w.active) {
      const Vals &active = eval(w.active, m);
      if (!active[0].bits[0]) {
        perThread(m, out, [&](int t) { return acc[t]; });
        return;
      }
    }
    const int group = first_ / 128, parity = group % 2, base = first_ % 128;
    if (w.turn.wait)
      b_.barrierSync(index_, w.turn.barrier + parity, 256, count_);
    const Vals *clear = w.clearAcc ? &eval(w.clearAcc, m) : nullptr;
    std::vector<const Vals *> as, bs;
    for (const WgmmaInstr &in : w.instrs) {
      as.push_back(&eval(in.a, m));
      bs.push_back(&eval(in.bDesc, m));
    }
    WgmmaGroup &g = b_.wgmmaSlot(group);
    const size_t instrs = w.instrs.size();
    g.aRegisters.resize(instrs, std::vector<Val>(128));
    g.aDesc.resize(instrs * 128);
    g.bDesc.resize(instrs * 128);
    for (int t = 0; t < 32; ++t) {
      const size_t at = static_cast<size_t>(base + t);
      g.acc[at] = acc[t];
      g.clear[at] = clear && (*clear)[t].bits[0];
      for (size_t i = 0; i < instrs; ++i) {
        if (w.aInRegisters)
          g.aRegisters[i][at] = (*as[i])[t];
        else
          g.aDesc[i * 128 + at] = (*as[i])[t].bits[0];
        g.bDesc[i * 128 + at] = (*bs[i])[t].bits[0];
      }
    }
    b_.wgmmaMeet(index_, group, &n, w);
    perThread(m, out, [&](int t) { return g.acc[static_cast<size_t>(base + t)]; });
    if (w.turn.pass)
      b_.barrierArrive(index_, w.turn.barrier + 1 - parity, 256, count_);
  }
  template <class Op> void evalOp(const Op &, const Node &, const Mask &, Vals &) {
    throw Stop("an operation the interpreter does not run (an NVIDIA-only instruction)");
  }

  void exec(const Body &body, const Mask &m) {
    if (std::find(m.begin(), m.end(), 1) == m.end())
      return;
    for (const Stmt &s : body) {
      clearCache();
      if (l_.interleaveStatements)
        b_.scheduler.yield(index_);
      std::visit([&](const auto &op) { execOp(op, m); }, s.op);
    }
    clearCache();
  }
  void execOp(const DeclVar &d, const Mask &m) { assign(d.id, d.init, m); }
  void execOp(const AssignVar &a, const Mask &m) { assign(a.id, a.value, m); }
  void assign(int id, const Expr &e, const Mask &m) {
    const Vals &v = eval(e, m);
    for (size_t t = 0; t < m.size(); ++t)
      if (m[t])
        vars_[t].at(static_cast<size_t>(id)) = v[t];
  }
  void execOp(const GlobalStore &g, const Mask &m) {
    const Vals &idx = eval(g.index, m);
    const Vals &v = eval(g.value, m);
    for (size_t t = 0; t < m.size(); ++t) {
      if (!m[t])
        continue;
      int64_t eb = widthBits(v[t].type.elem) / 8, first = scalarInt(idx[t]) * eb;
      writeLanes(v[t], tensor(g.param, first, eb * v[t].type.lanes).data() + first);
    }
  }
  void execOp(const SharedStore &s, const Mask &m) {
    const Vals &off = eval(s.byteOffset, m);
    const Vals &v = eval(s.value, m);
    for (size_t t = 0; t < m.size(); ++t)
      if (m[t])
        writeLanes(v[t], b_.store(index_, scalarInt(off[t]),
                                  widthBits(v[t].type.elem) / 8 * v[t].type.lanes));
  }
  void execOp(const IfStmt &i, const Mask &m) {
    const Vals &c = eval(i.cond, m);
    Mask then(m.size(), 0), otherwise(m.size(), 0);
    for (size_t t = 0; t < m.size(); ++t)
      if (m[t])
        (c[t].bits[0] ? then : otherwise)[t] = 1;
    exec(i.then, then);
    exec(i.otherwise, otherwise);
  }
  void execOp(const ForStmt &f, const Mask &m) {
    Vals begin = eval(f.begin, m), end = eval(f.end, m), step = eval(f.step, m);
    clearCache();
    Mask live = m;
    for (size_t t = 0; t < m.size(); ++t)
      if (m[t])
        vars_[t].at(static_cast<size_t>(f.var)) =
            splat(f.varType, castBits(begin[t].bits[0], f.begin->type.elem, f.varType.elem));
    for (;;) {
      bool any = false;
      for (size_t t = 0; t < m.size(); ++t) {
        if (!live[t])
          continue;
        live[t] = scalarInt(vars_[t][static_cast<size_t>(f.var)]) < scalarInt(end[t]);
        any = any || live[t];
      }
      if (!any)
        return;
      exec(f.body, live);
      for (size_t t = 0; t < m.size(); ++t)
        if (live[t]) {
          Val &v = vars_[t][static_cast<size_t>(f.var)];
          v.bits[0] = fromInt(scalarInt(v) + scalarInt(step[t]), f.varType.elem);
        }
    }
  }
  void execOp(const Barrier &br, const Mask &) {
    b_.barrierSync(index_, br.id, br.threads, count_);
  }
  void execOp(const WarpgroupTurn &turn, const Mask &) {
    const int w = first_ / 128 % 2;
    if (turn.pass)
      b_.barrierArrive(index_, turn.barrier + 1 - w, 256, count_);
    else
      b_.barrierSync(index_, turn.barrier + w, 256, count_);
  }
  // Each warp runs alone until it waits, so fences order nothing the interpreter could reorder;
  // asynchronous copies complete as they are issued (cp.async, TMA), so their waits pass.
  void execOp(const FenceCta &, const Mask &) {}
  void execOp(const FenceProxyAsync &, const Mask &) { b_.proxyFence(index_); }
  void execOp(const FenceMbarrierInit &, const Mask &) {}
  void execOp(const SetMaxNReg &, const Mask &) {}
  void execOp(const CpAsyncCommit &, const Mask &) {}
  void execOp(const CpAsyncWait &, const Mask &) {}
  void execOp(const WgmmaWait &w, const Mask &) { b_.wgmmaRetire(first_ / 128, w.pending); }
  void execOp(const CpAsync &c, const Mask &m) {
    const Vals &idx = eval(c.index, m);
    const Vals &off = eval(c.byteOffset, m);
    const Vals *src = c.srcBytes ? &eval(c.srcBytes, m) : nullptr;
    const int64_t eb = dtypeBits(k_.params.at(static_cast<size_t>(c.param)).dtype) / 8;
    for (size_t t = 0; t < m.size(); ++t) {
      if (!m[t])
        continue;
      const int64_t n = src ? scalarInt((*src)[t]) : 16;
      if (n < 0 || n > 16)
        throw Stop(fmt::format("cp.async of {} source bytes", n));
      uint8_t *to = b_.store(index_, scalarInt(off[t]), 16);
      std::memset(to, 0, 16);
      if (n > 0) {
        const int64_t first = scalarInt(idx[t]) * eb;
        std::memcpy(to, tensor(c.param, first, n).data() + first, static_cast<size_t>(n));
      }
    }
  }
  static uint64_t combine(AtomicOp op, uint64_t old, uint64_t value, DType t) {
    const BinOp b = op == AtomicOp::Add   ? BinOp::Add
                    : op == AtomicOp::Max ? BinOp::Max
                                          : BinOp::Min;
    return binary(b, old, value, t, t);
  }
  void execOp(const GlobalAtomic &a, const Mask &m) {
    const Vals &idx = eval(a.index, m);
    const Vals &v = eval(a.value, m);
    for (size_t t = 0; t < m.size(); ++t) {
      if (!m[t])
        continue;
      const DType e = v[t].type.elem;
      const int64_t eb = widthBits(e) / 8, first = scalarInt(idx[t]) * eb;
      Val old(v[t].type);
      uint8_t *p = tensor(a.param, first, eb).data() + first;
      readLanes(old, p);
      old.bits[0] = combine(a.op, old.bits[0], v[t].bits[0], e);
      writeLanes(old, p);
    }
  }
  void execOp(const SharedAtomic &a, const Mask &m) {
    const Vals &off = eval(a.byteOffset, m);
    const Vals &v = eval(a.value, m);
    for (size_t t = 0; t < m.size(); ++t) {
      if (!m[t])
        continue;
      const DType e = v[t].type.elem;
      Val old(v[t].type);
      uint8_t *p = b_.store(index_, scalarInt(off[t]), widthBits(e) / 8);
      readLanes(old, p);
      old.bits[0] = combine(a.op, old.bits[0], v[t].bits[0], e);
      writeLanes(old, p);
    }
  }
  void execOp(const MbarrierInit &i, const Mask &m) {
    const Vals &off = eval(i.byteOffset, m);
    const Vals &count = eval(i.count, m);
    for (size_t t = 0; t < m.size(); ++t)
      if (m[t])
        b_.mbarrierInit(scalarInt(off[t]), scalarInt(count[t]));
  }
  void execOp(const MbarrierArrive &a, const Mask &m) {
    const Vals &off = eval(a.byteOffset, m);
    const Vals *tx = a.txBytes ? &eval(a.txBytes, m) : nullptr;
    for (size_t t = 0; t < m.size(); ++t)
      if (m[t])
        b_.mbarrierArrive(index_, scalarInt(off[t]), tx ? scalarInt((*tx)[t]) : 0);
  }
  void execOp(const MbarrierWait &w, const Mask &m) {
    const Vals &off = eval(w.byteOffset, m);
    const Vals &parity = eval(w.parity, m);
    std::vector<std::pair<int64_t, int64_t>> waits;
    for (size_t t = 0; t < m.size(); ++t)
      if (m[t])
        waits.emplace_back(scalarInt(off[t]), scalarInt(parity[t]));
    b_.mbarrierWait(index_, waits);
  }
  void execOp(const TmaLoad &l, const Mask &m) {
    std::vector<const Vals *> coords;
    for (const Expr &c : l.coords)
      coords.push_back(&eval(c, m));
    const Vals &off = eval(l.byteOffset, m);
    const Vals &bar = eval(l.barOffset, m);
    const TensorMapView &map = s_.maps.at(static_cast<size_t>(l.map));
    if (!map.tensor)
      throw Stop(fmt::format("parameter {} is not a tensor map", l.map));
    for (size_t t = 0; t < m.size(); ++t) {
      if (!m[t])
        continue;
      std::vector<int64_t> at;
      for (const Vals *c : coords)
        at.push_back(scalarInt((*c)[t]));
      b_.checkWrite(scalarInt(off[t]), map.boxBytes(), "a TMA load");
      const int64_t bytes = copyTmaBox(map, at, b_.shared(), scalarInt(off[t]));
      b_.tmaWritten(scalarInt(off[t]), bytes, scalarInt(bar[t]));
      b_.mbarrierCompleteTx(scalarInt(bar[t]), bytes);
    }
  }
  template <class Op> void execOp(const Op &, const Mask &) {
    throw Stop("a statement the interpreter does not run (printf)");
  }

  const Kernel &k_;
  const InterpreterLaunch &l_;
  const LaunchState &s_;
  Block &b_;
  int index_, first_, count_;
  std::vector<std::vector<Val>> vars_;
  std::unordered_map<const Node *, Vals *> cache_;
  std::deque<Vals> pool_; // stable addresses: values computed earlier stay where they are
  size_t used_ = 0;
};

/// The blocks a launch runs: the grid, or for a persistent kernel as many as fit on the
/// launch's multiprocessors (numbered along x; the kernel walks the grid itself).
std::array<int64_t, 3> launchedGrid(const Kernel &k, Warp &host, const InterpreterLaunch &l) {
  std::array<int64_t, 3> grid{1, 1, 1};
  for (size_t d = 0; d < 3; ++d)
    grid[d] = k.grid[d] ? host.host(k.grid[d]) : 1;
  if (k.persistentBlocksPerSM > 0)
    grid = {persistentLaunchBlocks(grid[0] * grid[1] * grid[2],
                                   int64_t{l.multiprocessors} * k.persistentBlocksPerSM, grid[0],
                                   k.persistentBalanceX),
            1, 1};
  return grid;
}

void run(const Kernel &k, const InterpreterLaunch &l) {
  if (l.warpSize <= 0 || k.threads <= 0)
    throw Stop(fmt::format("{} threads in warps of {}", k.threads, l.warpSize));
  LaunchState s{k, l, l.scalars, std::vector<TensorMapView>(k.params.size())};
  s.scalars.resize(k.params.size(), 0.0);
  const int maxVar = maxVarOf(k.body);
  const int warps = (k.threads + l.warpSize - 1) / l.warpSize;
  Block block;
  block.reset(k.dynamicSharedBytes, k.threads, warps, (k.threads + 127) / 128);
  std::vector<Warp> ws;
  ws.reserve(static_cast<size_t>(warps));
  for (int w = 0; w < warps; ++w)
    ws.emplace_back(s, block, w, maxVar);
  // The tensor maps as the generated launch function encodes them; TMA is on where every map
  // could be encoded (extents in 1 .. 2^32, byte strides multiples of 16, as the runtime
  // checks) and the launch leaves it on.
  bool tma = l.tma;
  for (size_t i = 0; i < k.params.size(); ++i) {
    const Param &p = k.params[i];
    if (p.kind != ParamKind::TensorMap)
      continue;
    TensorMapView &v = s.maps[i];
    if (p.map.tensor < 0 || static_cast<size_t>(p.map.tensor) >= l.tensors.size() ||
        !l.tensors[static_cast<size_t>(p.map.tensor)])
      throw Stop(fmt::format("tensor map '{}' has no tensor", p.name));
    v.tensor = l.tensors[static_cast<size_t>(p.map.tensor)];
    v.elementBytes = dtypeBits(p.dtype) / 8;
    for (const Expr &d : p.map.dims) {
      v.dims.push_back(ws[0].host(d));
      tma = tma && v.dims.back() > 0 && v.dims.back() <= (int64_t{1} << 32);
    }
    for (const Expr &st : p.map.strides) {
      v.strides.push_back(ws[0].host(st));
      tma = tma && v.strides.back() > 0 && v.strides.back() % 16 == 0;
    }
    v.box = p.map.box;
    v.swizzleBytes = p.map.swizzleBytes;
  }
  for (size_t i = 0; i < k.params.size(); ++i)
    if (k.params[i].kind == ParamKind::TmaEnabled)
      s.scalars[i] = tma ? 1 : 0;
  block.grid = launchedGrid(k, ws[0], l);
  for (int64_t z = 0; z < block.grid[2]; ++z)
    for (int64_t y = 0; y < block.grid[1]; ++y)
      for (int64_t x = 0; x < block.grid[0]; ++x) {
        block.index = {x, y, z};
        block.reset(k.dynamicSharedBytes, k.threads, warps, (k.threads + 127) / 128);
        block.scheduler.run(warps, [&](int w) {
          ws[static_cast<size_t>(w)].run();
          block.warpReturned(ws[static_cast<size_t>(w)].threads());
        });
      }
}

} // namespace

std::optional<std::string> interpret(const Kernel &k, const InterpreterLaunch &launch) {
  try {
    run(k, launch);
  } catch (const std::exception &e) {
    return fmt::format("{}: {}", k.name, e.what());
  }
  return std::nullopt;
}

} // namespace tilec::thir
