#include "threadir/Interpreter.h"

#include "threadir/InterpreterValue.h"

#include "analysis/MfmaLayout.h"
#include "support/IntMath.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <unordered_map>

namespace tilec::thir {

namespace {

using namespace interp;

class Interpreter {
public:
  Interpreter(const Kernel &k, const InterpreterLaunch &l) : k_(k), l_(l) {
    int maxVar = 0;
    countVars(k.body, maxVar);
    vars_.assign(static_cast<size_t>(k.threads), std::vector<Val>(maxVar + 1));
  }

  void run() {
    for (int d = 0; d < 3; ++d)
      grid_[d] = k_.grid[d] ? host(k_.grid[d]) : 1;
    for (block_[2] = 0; block_[2] < grid_[2]; ++block_[2])
      for (block_[1] = 0; block_[1] < grid_[1]; ++block_[1])
        for (block_[0] = 0; block_[0] < grid_[0]; ++block_[0]) {
          smem_.assign(static_cast<size_t>(k_.dynamicSharedBytes), 0xCD);
          exec(k_.body, Mask(static_cast<size_t>(k_.threads), 1));
        }
  }

private:
  using Mask = std::vector<char>;
  using Vals = std::vector<Val>;

  static void countVars(const Body &body, int &maxVar) {
    for (const Stmt &s : body) {
      if (auto *d = std::get_if<DeclVar>(&s.op))
        maxVar = std::max(maxVar, d->id);
      if (auto *f = std::get_if<ForStmt>(&s.op)) {
        maxVar = std::max(maxVar, f->var);
        countVars(f->body, maxVar);
      }
      if (auto *i = std::get_if<IfStmt>(&s.op)) {
        countVars(i->then, maxVar);
        countVars(i->otherwise, maxVar);
      }
    }
  }

  /// A grid or scalar expression of the launch (no thread state).
  int64_t host(const Expr &e) {
    Mask one(static_cast<size_t>(k_.threads), 0);
    one[0] = 1;
    Val v = eval(e, one)[0];
    cache_.clear();
    return floating(v.type.elem) ? static_cast<int64_t>(toDouble(v.bits[0], v.type.elem))
                                 : toInt(v.bits[0], v.type.elem);
  }

  std::vector<uint8_t> &tensor(int param, int64_t firstByte, int64_t bytes) {
    if (param < 0 || static_cast<size_t>(param) >= l_.tensors.size() || !l_.tensors[param])
      throw Stop(fmt::format("parameter {} has no tensor", param));
    std::vector<uint8_t> &t = *l_.tensors[param];
    if (firstByte < 0 || firstByte + bytes > static_cast<int64_t>(t.size()))
      throw Stop(fmt::format("access of bytes [{}, {}) of tensor '{}' ({} bytes)", firstByte,
                             firstByte + bytes, k_.params[param].name, t.size()));
    return t;
  }
  uint8_t *shared(int64_t offset, int64_t bytes) {
    if (offset < 0 || offset + bytes > static_cast<int64_t>(smem_.size()))
      throw Stop(fmt::format("access of shared bytes [{}, {}) of {}", offset, offset + bytes,
                             smem_.size()));
    return smem_.data() + offset;
  }
  const Vals &eval(const Expr &e, const Mask &m) {
    if (auto it = cache_.find(e.get()); it != cache_.end())
      return it->second;
    if (e->type.lanes > 16)
      throw Stop(fmt::format("a vector of {} lanes", e->type.lanes));
    Vals out(m.size());
    std::visit([&](const auto &op) { evalOp(op, *e, m, out); }, e->op);
    return cache_.emplace(e.get(), std::move(out)).first->second;
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
    if (p.index < 0 || static_cast<size_t>(p.index) >= l_.scalars.size())
      throw Stop(fmt::format("no value for parameter {}", p.index));
    double x = l_.scalars[p.index];
    Val v = splat(n.type, floating(n.type.elem) ? fromDouble(x, n.type.elem)
                                                : fromInt(static_cast<int64_t>(x), n.type.elem));
    perThread(m, out, [&](int) { return v; });
  }
  void evalOp(const SpecialReg &s, const Node &n, const Mask &m, Vals &out) {
    perThread(m, out, [&](int t) {
      int64_t x = 0;
      switch (s.reg) {
      case Special::ThreadIdxX:
        x = t;
        break;
      case Special::BlockIdxX:
      case Special::BlockIdxY:
      case Special::BlockIdxZ:
        x = block_[static_cast<int>(s.reg) - static_cast<int>(Special::BlockIdxX)];
        break;
      case Special::GridDimX:
      case Special::GridDimY:
      case Special::GridDimZ:
        x = grid_[static_cast<int>(s.reg) - static_cast<int>(Special::GridDimX)];
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
      Val v{n.type, {}};
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
      Val v{n.type, {}};
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
      Val v{n.type, {}};
      for (int i = 0; i < n.type.lanes; ++i)
        v.bits[i] = c[t].bits[s.cond->type.lanes > 1 ? i : 0] ? a[t].bits[i] : b[t].bits[i];
      return v;
    });
  }
  void evalOp(const Cast &c, const Node &n, const Mask &m, Vals &out) {
    const Vals &a = eval(c.a, m);
    perThread(m, out, [&](int t) {
      Val v{n.type, {}};
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
      Val v{n.type, {}};
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
      Val v{n.type, {}};
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
      if (lane < 0 || lane >= w || from >= k_.threads)
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
      Val v{n.type, {}};
      readLanes(v, shared(scalarInt(off[t]), widthBits(n.type.elem) / 8 * n.type.lanes));
      return v;
    });
  }
  void evalOp(const Bitcast &b, const Node &n, const Mask &m, Vals &out) {
    const Vals &a = eval(b.a, m);
    perThread(m, out, [&](int t) {
      uint8_t bytes[128] = {};
      writeLanes(a[t], bytes);
      Val v{n.type, {}};
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
    for (int w0 = 0; w0 < k_.threads; w0 += 64) {
      std::vector<double> A(static_cast<size_t>(f.m * f.k)), B(static_cast<size_t>(f.k * f.n)),
          D(static_cast<size_t>(f.m * f.n));
      for (int lane = 0; lane < 64; ++lane) {
        int t = w0 + lane;
        if (t >= k_.threads || !m[t])
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
        Val v{n.type, {}};
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
    for (int w0 = 0; w0 < k_.threads; w0 += w) {
      for (int lane = 0; lane < w; ++lane)
        if (w0 + lane >= k_.threads || !m[w0 + lane])
          throw Stop("ldmatrix with an inactive lane");
      auto element = [&](int j, int row, int col) {
        const uint8_t *p = shared(scalarInt(off[w0 + 8 * j + row]) + 2 * col, 2);
        return uint64_t{p[0]} | uint64_t{p[1]} << 8;
      };
      for (int lane = 0; lane < w; ++lane) {
        Val v{n.type, {}};
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
    for (int w0 = 0; w0 < k_.threads; w0 += w) {
      double A[16][16], B[16][8], D[16][8];
      for (int lane = 0; lane < w; ++lane) {
        const int t = w0 + lane, g = lane / 4, q = lane % 4;
        if (t >= k_.threads || !m[t])
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
        Val v{n.type, {}};
        for (int i = 0; i < 4; ++i)
          v.bits[i] = fromDouble(D[g + 8 * (i / 2)][2 * q + i % 2], DType::Float32);
        out[w0 + lane] = v;
      }
    }
  }
  template <class Op> void evalOp(const Op &, const Node &, const Mask &, Vals &) {
    throw Stop("an operation the interpreter does not run (an NVIDIA-only instruction)");
  }

  void exec(const Body &body, const Mask &m) {
    if (std::find(m.begin(), m.end(), 1) == m.end())
      return;
    for (const Stmt &s : body) {
      cache_.clear();
      std::visit([&](const auto &op) { execOp(op, m); }, s.op);
    }
    cache_.clear();
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
        writeLanes(v[t],
                   shared(scalarInt(off[t]), widthBits(v[t].type.elem) / 8 * v[t].type.lanes));
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
    cache_.clear();
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
  // Lockstep execution keeps every thread at the same statement: barriers and fences hold.
  void execOp(const Barrier &, const Mask &) {}
  void execOp(const FenceCta &, const Mask &) {}
  void execOp(const FenceProxyAsync &, const Mask &) {}
  template <class Op> void execOp(const Op &, const Mask &) {
    throw Stop("a statement the interpreter does not run (atomics, printf, asynchronous copies, "
               "mbarriers or wgmma)");
  }

  const Kernel &k_;
  const InterpreterLaunch &l_;
  std::array<int64_t, 3> grid_{1, 1, 1}, block_{0, 0, 0};
  std::vector<std::vector<Val>> vars_;
  std::vector<uint8_t> smem_;
  std::unordered_map<const Node *, Vals> cache_;
};

} // namespace

std::optional<std::string> interpret(const Kernel &k, const InterpreterLaunch &launch) {
  try {
    Interpreter(k, launch).run();
  } catch (const Stop &s) {
    return fmt::format("{}: {}", k.name, s.what());
  } catch (const std::logic_error &e) {
    return fmt::format("{}: {}", k.name, e.what());
  }
  return std::nullopt;
}

} // namespace tilec::thir
