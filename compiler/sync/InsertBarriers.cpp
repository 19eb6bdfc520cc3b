// insert-barriers (Sync.h). Like TVM's ThreadSync, which TileLang runs after lowering its tile
// ops, it orders read-after-write and write-after-read between threads; two writes with no read
// between are not ordered. Accesses conflict where their regions overlap (thir::SmemRegion: the
// buffer lowering addressed); one without a region conflicts with every other.
#include "sync/Effects.h"
#include "sync/Sync.h"

#include <fmt/format.h>

#include <set>
#include <stdexcept>
#include <unordered_map>

namespace tilec::sync {

namespace {

/// Accesses some thread may have made since the last barrier of the code being walked.
struct Pending {
  Regions read;          // generic or async-proxy reads
  Regions write;         // generic writes
  Regions atomic;        // atomic read-modify-writes
  bool unfenced = false; // generic writes of this thread no fence.proxy.async has covered
  friend bool operator==(const Pending &, const Pending &) = default;
  Pending operator|(const Pending &o) const {
    Pending p = *this;
    p.read |= o.read;
    p.write |= o.write;
    p.atomic |= o.atomic;
    p.unfenced = unfenced || o.unfenced;
    return p;
  }
  void ordered() { read = write = atomic = Regions(); }
};

/// What must come before code with effects `e` when `p` is pending.
struct Need {
  bool barrier = false, fence = false;
};
Need needBefore(const Pending &p, const Effects &e) {
  Need n;
  // wgmma reads its operands through descriptors, in the async proxy: generic writes before it
  // are fenced (wherever they went, as this pass does not track what the fence covers). What
  // it reads is its operands' buffers (thir::Wgmma::reads). A barrier orders those reads only
  // where every thread waited for its wgmma before it: lowering places the waits so.
  n.fence = p.unfenced && e.asyncRead;
  // Atomics conflict with plain accesses both ways, not with each other.
  const Regions &reads = e.read;
  n.barrier = n.fence || p.write.overlaps(reads) || p.read.overlaps(e.write) ||
              p.write.overlaps(e.atomic) || p.read.overlaps(e.atomic) || p.atomic.overlaps(reads) ||
              p.atomic.overlaps(e.write);
  return n;
}

Pending after(Pending p, const Effects &e) {
  p.read |= e.read;
  p.write |= e.landed ? Regions::everything() : e.write;
  p.atomic |= e.atomic;
  p.unfenced |= !e.write.empty() || !e.atomic.empty() || e.landed;
  return p;
}

/// The code being walked: whether every thread of its group runs it alike (so that a barrier
/// may go there) and which barrier the group synchronizes with.
struct Context {
  bool uniform = true;
  thir::Barrier barrier{};
};

class Inserter {
public:
  explicit Inserter(thir::Kernel &k) : k_(k) {}

  void run() {
    findDivergentVars();
    walk(k_.body, {}, Context{}, /*mutate=*/true);
  }

private:
  // ---- Which values may differ between the threads of a group --------------------------------
  bool uniform(const thir::Expr &e) {
    if (!e)
      return true;
    if (auto it = uniformMemo_.find(e.get()); it != uniformMemo_.end())
      return it->second;
    bool u = true;
    if (auto *s = std::get_if<thir::SpecialReg>(&e->op))
      u = s->reg != thir::Special::ThreadIdxX;
    else if (auto *v = std::get_if<thir::VarRef>(&e->op))
      u = !divergentVars_.count(v->id);
    else if (std::holds_alternative<thir::SharedLoad>(e->op) ||
             std::holds_alternative<thir::LdMatrix>(e->op) ||
             std::holds_alternative<thir::ShflXor>(e->op) ||
             std::holds_alternative<thir::Shfl>(e->op) ||
             std::holds_alternative<thir::MmaSync>(e->op) ||
             std::holds_alternative<thir::Mfma>(e->op) ||
             std::holds_alternative<thir::Wgmma>(e->op))
      u = false;
    if (u)
      thir::forEachOperand(*e, [&](const thir::Expr &o) { u = u && uniform(o); });
    uniformMemo_.emplace(e.get(), u);
    return u;
  }

  void markDivergent(int var, bool divergent) {
    if (divergent && divergentVars_.insert(var).second)
      changed_ = true;
  }

  void scanDivergence(const thir::Body &body, bool divergent) {
    for (const thir::Stmt &s : body) {
      if (auto *d = std::get_if<thir::DeclVar>(&s.op)) {
        markDivergent(d->id, divergent || !uniform(d->init));
      } else if (auto *a = std::get_if<thir::AssignVar>(&s.op)) {
        markDivergent(a->id, divergent || !uniform(a->value));
      } else if (auto *w = std::get_if<thir::WgmmaWait>(&s.op)) {
        for (int v : w->vars)
          markDivergent(v, true);
      } else if (auto *i = std::get_if<thir::IfStmt>(&s.op)) {
        // A sync group's branch is run alike by the group's threads.
        bool d = divergent || !uniform(i->cond);
        scanDivergence(i->then, i->thenGroup ? divergent : d);
        scanDivergence(i->otherwise, i->elseGroup ? divergent : d);
      } else if (auto *f = std::get_if<thir::ForStmt>(&s.op)) {
        bool d = divergent || !uniform(f->begin) || !uniform(f->end) || !uniform(f->step);
        markDivergent(f->var, d);
        scanDivergence(f->body, d);
      }
    }
  }

  void findDivergentVars() {
    do {
      changed_ = false;
      uniformMemo_.clear();
      scanDivergence(k_.body, false);
    } while (changed_);
    uniformMemo_.clear();
  }

  // ---- The walk ----------------------------------------------------------------------------
  /// Inserts what `need` asks for before body[i] (when mutating) and returns how many
  /// statements it inserted. Code the group's threads do not all run alike gets none: lowering
  /// puts shared accesses there only where each thread touches what it alone owns (its lines,
  /// its guarded chunks), and what other threads did is ordered before that code is entered.
  size_t satisfy(thir::Body &body, size_t i, Need need, Pending &p, const Context &ctx,
                 bool mutate) {
    if (!need.barrier || !ctx.uniform)
      return 0;
    placed_ += need.fence ? 2 : 1;
    p.ordered();
    if (need.fence)
      p.unfenced = false;
    if (!mutate)
      return 0;
    thir::Body sync;
    if (need.fence)
      sync.push_back({thir::FenceProxyAsync{}});
    sync.push_back({ctx.barrier});
    // Never right after the wait for a ping-pong turn: the holder would wait at the barrier
    // for the other warpgroup, which waits for the turn. The turn orders no memory, so the
    // barrier does the same before it.
    while (i > 0) {
      auto *turn = std::get_if<thir::WarpgroupTurn>(&body[i - 1].op);
      if (!turn || turn->pass)
        break;
      --i;
    }
    body.insert(body.begin() + static_cast<std::ptrdiff_t>(i), sync.begin(), sync.end());
    return sync.size();
  }

  Pending walkBranch(thir::Body &body, const std::optional<thir::SyncGroup> &group, bool divergent,
                     Pending p, const Context &ctx, bool mutate) {
    Context inner = ctx;
    if (group)
      inner.barrier = thir::Barrier{group->barrier, group->threads};
    else if (divergent)
      inner.uniform = false;
    return walk(body, p, inner, mutate);
  }

  Pending walk(thir::Body &body, Pending p, const Context &ctx, bool mutate) {
    for (size_t i = 0; i < body.size(); ++i) {
      thir::Stmt &st = body[i];
      if (std::holds_alternative<thir::Barrier>(st.op)) {
        p.ordered();
        continue;
      }
      if (std::holds_alternative<thir::FenceProxyAsync>(st.op)) {
        p.unfenced = false;
        continue;
      }
      Effects own = fx_.ofStmt(st);
      if (auto *f = std::get_if<thir::ForStmt>(&st.op)) {
        Context inner = ctx;
        inner.uniform = ctx.uniform && uniform(f->begin) && uniform(f->end) && uniform(f->step);
        // The top of the body sees the entry and whatever an iteration leaves pending.
        auto top = [&](Pending entry) {
          return loopFixpoint(entry, [&](Pending in) { return walk(f->body, in, inner, false); });
        };
        auto cost = [&](Pending entry) {
          size_t before = placed_;
          walk(f->body, top(entry), inner, false);
          return placed_ - before;
        };
        // What was pending at the loop is ordered before it: always when its threads do not
        // all run it alike, else when that saves the iterations barriers of their own.
        Need hoist = needBefore(p, fx_.summarize(f->body));
        if (hoist.barrier && ctx.uniform) {
          Pending ordered = p;
          ordered.ordered();
          ordered.unfenced = p.unfenced && !hoist.fence;
          if (!inner.uniform || cost(ordered) < cost(p))
            i += satisfy(body, i, hoist, p, ctx, mutate);
        }
        f = std::get_if<thir::ForStmt>(&body[i].op);
        p = p | walk(f->body, top(p), inner, mutate);
        continue;
      }
      if (auto *c = std::get_if<thir::IfStmt>(&st.op)) {
        bool divergent = !uniform(c->cond);
        // Threads that take different branches (or synchronize by groups) need what is pending
        // ordered before the branch.
        Effects before = own;
        if (divergent || c->thenGroup || c->elseGroup) {
          before |= fx_.summarize(c->then);
          before |= fx_.summarize(c->otherwise);
        }
        i += satisfy(body, i, needBefore(p, before), p, ctx, mutate);
        c = std::get_if<thir::IfStmt>(&body[i].op);
        Pending t = walkBranch(c->then, c->thenGroup, divergent, p, ctx, mutate);
        Pending e = walkBranch(c->otherwise, c->elseGroup, divergent, p, ctx, mutate);
        p = t | e;
        continue;
      }
      i += satisfy(body, i, needBefore(p, own), p, ctx, mutate);
      p = after(p, own);
    }
    return p;
  }

  thir::Kernel &k_;
  EffectsCache fx_;
  std::set<int> divergentVars_;
  std::unordered_map<const thir::Node *, bool> uniformMemo_;
  bool changed_ = false;
  /// Barriers and fences placed (or, walking without mutating, that would be): the cost a
  /// loop's entry compares.
  size_t placed_ = 0;
};

} // namespace

void insertBarriers(thir::Module &m) {
  for (thir::Kernel &k : m.kernels) {
    Inserter(k).run();
    // Lowering and the verifier keep barriers out of held turns; this pass must not add one.
    if (!thir::barriersInHeldTurns(k).empty())
      throw std::logic_error(
          fmt::format("kernel '{}': a barrier where a warpgroup holds its ping-pong turn", k.name));
  }
}

} // namespace tilec::sync
