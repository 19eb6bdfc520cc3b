// plan-pipelines: which copies of `Pipelined(n, num_stages=S)` loops are issued ahead. The
// loop's copies from global to shared memory are issued S - 1 iterations ahead with cp.async
// into S versions of their buffers, so that the loads of later iterations overlap the compute
// of this one (LowerPipeline.cpp lowers the plan).
//
// A copy qualifies when it is a top-level statement of the body, writes a whole shared buffer
// that nothing else writes and nothing outside the loop reads, and its source region depends
// only on the loop variable, on values the body does not change, and on top-level lets of the
// body computed from those (re-run for the issued iteration). Everything else in the loop keeps
// its order; a loop without such copies runs with one stage.
#include "lower/Plan.h"

#include <functional>
#include <set>

namespace tilec::lower {

namespace {

/// Buffers and variables a piece of tile IR refers to, and the variables and buffers it writes.
struct Refs {
  std::set<int> buffers, vars, assignedVars, writtenBuffers;

  void expr(const tile::Expr &e) {
    if (!e)
      return;
    std::visit(
        [&](const auto &op) {
          using T = std::decay_t<decltype(op)>;
          if constexpr (std::is_same_v<T, tile::VarRef>) {
            vars.insert(op.var->id);
          } else if constexpr (std::is_same_v<T, tile::Load>) {
            buffers.insert(op.buffer->id);
            for (const tile::Expr &i : op.indices)
              expr(i);
          } else if constexpr (std::is_same_v<T, tile::Unary> || std::is_same_v<T, tile::Cast>) {
            expr(op.a);
          } else if constexpr (std::is_same_v<T, tile::Binary>) {
            expr(op.a);
            expr(op.b);
          } else if constexpr (std::is_same_v<T, tile::Select>) {
            expr(op.cond);
            expr(op.a);
            expr(op.b);
          }
        },
        e->op);
  }
  void region(const tile::Region &r, bool written = false) {
    buffers.insert(r.buffer->id);
    if (written)
      writtenBuffers.insert(r.buffer->id);
    for (const tile::RegionDim &d : r.dims) {
      expr(d.begin);
      expr(d.extent);
    }
  }
  void body(const tile::Body &b) {
    for (const tile::Stmt &s : b)
      stmt(s);
  }
  void stmt(const tile::Stmt &s) {
    std::visit(
        [&](const auto &op) {
          using T = std::decay_t<decltype(op)>;
          if constexpr (std::is_same_v<T, tile::Let>) {
            assignedVars.insert(op.var->id);
            expr(op.value);
          } else if constexpr (std::is_same_v<T, tile::Store>) {
            buffers.insert(op.buffer->id);
            writtenBuffers.insert(op.buffer->id);
            for (const tile::Expr &i : op.indices)
              expr(i);
            expr(op.value);
          } else if constexpr (std::is_same_v<T, tile::Copy>) {
            region(op.src);
            region(op.dst, true);
          } else if constexpr (std::is_same_v<T, tile::Fill>) {
            region(op.dst, true);
            expr(op.value);
          } else if constexpr (std::is_same_v<T, tile::Gemm>) {
            region(op.a);
            region(op.b);
            region(op.c, true);
          } else if constexpr (std::is_same_v<T, tile::Reduce> || std::is_same_v<T, tile::Cumsum>) {
            region(op.src);
            region(op.dst, true);
          } else if constexpr (std::is_same_v<T, tile::AtomicAdd>) {
            region(op.dst, true);
            if (op.src)
              region(*op.src);
            expr(op.value);
            for (const tile::Expr &i : op.indices)
              expr(i);
          } else if constexpr (std::is_same_v<T, tile::For>) {
            for (const tile::VarPtr &v : op.vars)
              assignedVars.insert(v->id);
            for (const tile::Expr &e : op.begins)
              expr(e);
            for (const tile::Expr &e : op.extents)
              expr(e);
            expr(op.step);
            body(op.body);
          } else if constexpr (std::is_same_v<T, tile::If>) {
            expr(op.cond);
            body(op.then);
            body(op.otherwise);
          } else if constexpr (std::is_same_v<T, tile::AnnotateLayout>) {
            buffers.insert(op.buffer->id);
          } else if constexpr (std::is_same_v<T, tile::Print>) {
            if (op.buffer)
              region(*op.buffer);
            expr(op.value);
          }
        },
        s.op);
  }
};

void planLoops(const tile::Kernel &k, const tile::Body &body, KernelPlan &kp) {
  for (const tile::Stmt &s : body) {
    if (auto *i = std::get_if<tile::If>(&s.op)) {
      planLoops(k, i->then, kp);
      planLoops(k, i->otherwise, kp);
      continue;
    }
    auto *f = std::get_if<tile::For>(&s.op);
    if (!f)
      continue;
    planLoops(k, f->body, kp);
    if (f->kind != tile::LoopKind::Pipelined || f->numStages < 2 || !f->order.empty() ||
        !f->stage.empty() || f->step)
      continue;
    // What the body changes, and what the rest of the kernel refers to.
    Refs inLoop;
    inLoop.body(f->body);
    Refs outside;
    std::function<void(const tile::Body &)> walk = [&](const tile::Body &b) {
      for (const tile::Stmt &st : b) {
        if (&st == &s)
          continue;
        if (auto *ff = std::get_if<tile::For>(&st.op)) {
          Refs header;
          for (const tile::Expr &e : ff->extents)
            header.expr(e);
          outside.buffers.insert(header.buffers.begin(), header.buffers.end());
          walk(ff->body);
        } else if (auto *ii = std::get_if<tile::If>(&st.op)) {
          outside.expr(ii->cond);
          walk(ii->then);
          walk(ii->otherwise);
        } else {
          outside.stmt(st);
        }
      }
    };
    walk(k.body);
    // Whether an issued iteration can recompute `vars`: the loop variable, values the body
    // does not change, and the lets re-run with the issue.
    auto isStable = [&](const std::set<int> &vars, const std::set<int> &lets) {
      for (int v : vars)
        if (v != f->vars[0]->id && inLoop.assignedVars.count(v) && !lets.count(v))
          return false;
      return true;
    };
    PipelinePlan plan;
    plan.stages = f->numStages;
    std::set<int> letVars;
    std::map<int, int> assignments;
    std::function<void(const tile::Body &)> countLets = [&](const tile::Body &b) {
      for (const tile::Stmt &st : b) {
        if (auto *l = std::get_if<tile::Let>(&st.op))
          ++assignments[l->var->id];
        if (auto *ff = std::get_if<tile::For>(&st.op))
          countLets(ff->body);
        if (auto *ii = std::get_if<tile::If>(&st.op)) {
          countLets(ii->then);
          countLets(ii->otherwise);
        }
      }
    };
    countLets(f->body);
    for (const tile::Stmt &st : f->body) {
      if (auto *l = std::get_if<tile::Let>(&st.op)) {
        Refs r;
        r.expr(l->value);
        if (assignments[l->var->id] == 1 && r.buffers.empty() && isStable(r.vars, letVars)) {
          plan.lets.push_back(&st);
          letVars.insert(l->var->id);
        }
        continue;
      }
      auto *c = std::get_if<tile::Copy>(&st.op);
      if (!c || c->src.buffer->scope != tile::Scope::Global ||
          c->dst.buffer->scope != tile::Scope::Shared || !c->dst.whole())
        continue;
      int dst = c->dst.buffer->id;
      Refs r;
      r.region(c->src);
      r.region(c->dst);
      int writers = 0;
      for (const tile::Stmt &other : f->body) {
        Refs w;
        w.stmt(other);
        writers += w.writtenBuffers.count(dst) ? 1 : 0;
      }
      // Whatever else the copy reads (the source tensor, per-thread variables in its indices)
      // must not change inside the loop, or the early copy would see an older value.
      bool readsChanging = false;
      for (int b : r.buffers)
        readsChanging = readsChanging || (b != dst && inLoop.writtenBuffers.count(b));
      if (outside.buffers.count(dst) || writers != 1 || kp.stagesOf.count(dst) || readsChanging ||
          !isStable(r.vars, letVars))
        continue;
      plan.copies.push_back(&st);
    }
    if (plan.copies.empty())
      continue;
    // Only the lets the copies need.
    Refs needed;
    for (const tile::Stmt *c : plan.copies)
      needed.stmt(*c);
    for (auto it = plan.lets.rbegin(); it != plan.lets.rend(); ++it) {
      auto *l = std::get_if<tile::Let>(&(*it)->op);
      if (needed.vars.count(l->var->id))
        needed.expr(l->value);
    }
    std::vector<const tile::Stmt *> lets;
    for (const tile::Stmt *l : plan.lets)
      if (needed.vars.count(std::get<tile::Let>(l->op).var->id))
        lets.push_back(l);
    plan.lets = std::move(lets);
    for (const tile::Stmt *c : plan.copies)
      kp.stagesOf[std::get<tile::Copy>(c->op).dst.buffer->id] = plan.stages;
    kp.pipelines[f] = std::move(plan);
  }
}

} // namespace

void planPipelines(const tile::Program &p, ProgramPlan &plan) {
  plan.kernels.resize(p.kernels.size());
  for (size_t i = 0; i < p.kernels.size(); ++i)
    planLoops(p.kernels[i], p.kernels[i].body, plan.kernels[i]);
}

} // namespace tilec::lower
