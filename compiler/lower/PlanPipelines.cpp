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
#include "lower/Refs.h"
#include "tileir/OpInterface.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <set>

namespace tilec::lower {

namespace {

/// Whether `b` refers to buffer `id` anywhere (its expressions, uses and nested bodies).
bool references(const tile::Stmt &st, int id) {
  Refs r;
  r.stmt(st);
  return r.buffers.count(id) > 0;
}

/// Whether the contents of shared buffer `id` when loop `loop` ends are dead: every other
/// statement of the kernel that refers to the buffer is a loop whose body writes all of it by a
/// copy before anything else there refers to it (a later pass over the same chunks reloads them).
bool deadOutside(const tile::Body &body, const tile::Stmt &loop, int id) {
  for (const tile::Stmt &st : body) {
    if (&st == &loop || !references(st, id))
      continue;
    auto *f = std::get_if<tile::For>(&st.op);
    if (!f)
      return false;
    Refs header;
    for (const tile::Expr &e : f->extents)
      header.expr(e);
    for (const tile::Expr &e : f->begins)
      header.expr(e);
    if (header.buffers.count(id))
      return false;
    for (const tile::Stmt &inner : f->body) {
      if (!references(inner, id))
        continue;
      auto *c = std::get_if<tile::Copy>(&inner.op);
      if (!c || c->dst.buffer->id != id || !c->dst.whole() || c->src.buffer->id == id)
        return false;
      break;
    }
  }
  return true;
}

/// Whether global -> shared copy `c` can be one TMA box per panel of `dst`'s layout: a tensor of
/// at most five dimensions whose region keeps two (the last one among them), the box the whole
/// shared buffer, a layout TMA writes (canonical swizzled lines). Returns the kept dimensions.
std::optional<TmaDims> tmaCopyable(const tile::Copy &c) {
  const tile::BufferPtr &src = c.src.buffer, &dst = c.dst.buffer;
  const size_t rank = src->shape.size();
  constexpr size_t kMaxTensorMapRank = 5;
  if (src->scope != tile::Scope::Global || dst->scope != tile::Scope::Shared || !c.dst.whole() ||
      rank < 2 || rank > kMaxTensorMapRank || dst->shape.size() != 2 || src->dtype != dst->dtype ||
      src->dtype == DType::Bool || c.src.dims.size() != rank)
    return std::nullopt;
  std::vector<size_t> kept;
  for (size_t d = 0; d < rank; ++d)
    if (!c.src.dims[d].dropped)
      kept.push_back(d);
  // The tile's lines must be contiguous in global memory: TMA's innermost dimension.
  if (kept.size() != 2 || kept[1] != rank - 1)
    return std::nullopt;
  std::vector<int64_t> shape;
  for (size_t i = 0; i < 2; ++i) {
    auto extent = tile::asConstInt(c.src.dims[kept[i]].extent);
    auto want = tile::asConstInt(dst->shape[i]);
    if (!extent || !want || *extent != *want)
      return std::nullopt;
    shape.push_back(*want);
  }
  analysis::SharedLayout l = analysis::chooseSharedLayout(shape, dtypeBytes(dst->dtype));
  constexpr int64_t kMaxBoxDim = 256;
  if (l.swizzleIsIdentity()) {
    // Row-major in memory (a small tile, such as one row of scales): one box without swizzle,
    // its lines whole multiples of 16 bytes and every version 128-byte aligned.
    if (l.panelled() || l.rowBytes % 16 != 0 || l.rowBytes / l.elementBytes > kMaxBoxDim ||
        l.rows > kMaxBoxDim || l.bytes() % 128 != 0)
      return std::nullopt;
    return TmaDims{kept[0], kept[1]};
  }
  // One box per panel: a panel is one swizzled line wide, its rows one box dimension.
  if (l.panelBytes != l.swizzleBytes || l.rows > kMaxBoxDim || l.bytes() % 1024 != 0)
    return std::nullopt;
  return TmaDims{kept[0], kept[1]};
}

/// Whether a statement before a warp-specialized loop may run in every thread, the producer's
/// included: it binds values or clears registers, and touches no memory.
bool runsInEveryThread(const tile::Stmt &s) {
  return std::visit(tile::Overloaded{
                        [](const tile::Let &l) {
                          bool reads = false;
                          tile::forEachNode(l.value, [&](const tile::Node &n) {
                            reads = reads || std::holds_alternative<tile::Load>(n.op);
                          });
                          return !reads;
                        },
                        [](const tile::UseSwizzle &) { return true; },
                        [](const tile::AnnotateLayout &) { return true; },
                        [](const tile::Fill &f) {
                          return f.dst.buffer->scope == tile::Scope::Fragment ||
                                 f.dst.buffer->scope == tile::Scope::Local;
                        },
                        [](const auto &) { return false; },
                    },
                    s.op);
}

/// Whether gemm `g` runs on wgmma: its accumulator is a fragment in the warpgroup arrangement.
bool onWgmma(const tile::Gemm &g, const std::map<int, analysis::FragmentLayout> &fragments) {
  auto l = fragments.find(g.c.buffer->id);
  return g.c.buffer->scope == tile::Scope::Fragment && l != fragments.end() && l->second.warpgroup;
}

/// Whether `st` touches registers only (fragments and locals), nested statements included.
bool onlyRegisters(const tile::Stmt &st) {
  auto isRegister = [](const tile::BufferPtr &b) {
    return b->scope == tile::Scope::Fragment || b->scope == tile::Scope::Local;
  };
  tile::Operands o = tile::operandsOf(st);
  bool ok = std::all_of(o.uses.begin(), o.uses.end(),
                        [&](const tile::BufferUse &u) { return isRegister(u.buffer); });
  for (const tile::Expr *e : o.exprs)
    tile::forEachNode(*e, [&](const tile::Node &n) {
      if (auto *l = std::get_if<tile::Load>(&n.op))
        ok = ok && isRegister(l->buffer);
    });
  for (const tile::Body *b : o.bodies)
    for (const tile::Stmt &s : *b)
      ok = ok && onlyRegisters(s);
  return ok;
}

/// The shared buffers the loop's copies issued ahead fill (its ring's tiles).
std::set<int> ringBuffers(const PipelinePlan &plan) {
  std::set<int> ring;
  for (const tile::Stmt *c : plan.copies)
    ring.insert(std::get<tile::Copy>(c->op).dst.buffer->id);
  return ring;
}

/// The statements of the loop's body other than the copies issued ahead, in order.
std::vector<const tile::Stmt *> nonCopyStatements(const tile::For &f, const PipelinePlan &plan) {
  std::vector<const tile::Stmt *> body;
  for (const tile::Stmt &st : f.body)
    if (std::find(plan.copies.begin(), plan.copies.end(), &st) == plan.copies.end())
      body.push_back(&st);
  return body;
}

/// Whether `st` writes what it writes in every iteration of the loop it is in: a copy or fill
/// of a whole region, or a Parallel loop with no branch and no other loop inside. A write that a
/// branch or a loop of run-time extent may skip would leave the other version of a produced
/// operand stale.
bool writesUnconditionally(const tile::Stmt &st) {
  if (auto *c = std::get_if<tile::Copy>(&st.op))
    return c->dst.whole();
  if (auto *fl = std::get_if<tile::Fill>(&st.op))
    return fl->dst.whole();
  auto *f = std::get_if<tile::For>(&st.op);
  if (!f || f->kind != tile::LoopKind::Parallel)
    return false;
  return std::all_of(f->body.begin(), f->body.end(), [](const tile::Stmt &inner) {
    return std::holds_alternative<tile::Let>(inner.op) ||
           std::holds_alternative<tile::Store>(inner.op);
  });
}

/// PipelinePlan::producedOperands for warp-specialized loop `s` (body `f`) whose one gemm is
/// not alone in the body: the gemm comes last (after the copies it may be interleaved with),
/// runs on wgmma accumulating into its fragment, and reads both operands from shared memory;
/// the statements before it touch neither that fragment nor any memory but registers, ring slots
/// (read) and the gemm's operands that are not ring slots (written, each in every iteration
/// (writesUnconditionally): the produced ones), which no statement outside the loop refers to.
/// Registers they write are their own, never the in-flight group's. Empty optional: the gemm cannot
/// stay in flight.
std::optional<std::vector<int>>
planProducedOperands(const tile::Kernel &k, const tile::Stmt &s, const tile::For &f,
                     const PipelinePlan &plan,
                     const std::map<int, analysis::FragmentLayout> &fragments) {
  const std::set<int> ring = ringBuffers(plan);
  const std::vector<const tile::Stmt *> body = nonCopyStatements(f, plan);
  if (body.size() < 2)
    return std::nullopt;
  auto *g = std::get_if<tile::Gemm>(&body.back()->op);
  if (!g || g->clearAccum || !onWgmma(*g, fragments) || g->a.buffer->scope != tile::Scope::Shared ||
      g->b.buffer->scope != tile::Scope::Shared)
    return std::nullopt;
  std::set<int> operands = {g->a.buffer->id, g->b.buffer->id};
  std::set<int> produced;
  std::map<int, tile::BufferPtr> byId;
  for (const tile::BufferPtr &b : k.buffers)
    byId[b->id] = b;
  for (size_t i = 0; i + 1 < body.size(); ++i) {
    Refs r;
    r.stmt(*body[i]);
    if (r.buffers.count(g->c.buffer->id))
      return std::nullopt;
    for (int id : r.buffers) {
      auto b = byId.find(id);
      if (b == byId.end())
        return std::nullopt;
      const tile::Scope scope = b->second->scope;
      const bool written = r.writtenBuffers.count(id) > 0;
      if (scope == tile::Scope::Fragment || scope == tile::Scope::Local)
        continue;
      if (scope == tile::Scope::Shared && !written && ring.count(id))
        continue;
      if (scope == tile::Scope::Shared && operands.count(id) && !ring.count(id)) {
        if (written && !writesUnconditionally(*body[i]))
          return std::nullopt;
        if (written)
          produced.insert(id);
        continue;
      }
      return std::nullopt;
    }
  }
  if (produced.empty())
    return std::nullopt;
  for (int id : produced)
    for (const tile::Stmt &st : k.body)
      if (&st != &s && references(st, id))
        return std::nullopt;
  return std::vector<int>(produced.begin(), produced.end());
}

/// PipelinePlan::overlap for a warp-specialized loop (the rules are the comment there). The
/// rotated gemm reads the previous iteration's slot while this iteration waits for and reads
/// its own, so the ring needs two slots; and only registers and ring slots may be its operands,
/// since its reads run on after the statements that follow it are issued (another warpgroup may
/// overwrite a shared buffer it reads once this one has passed a barrier).
std::optional<PipelinePlan::GemmOverlap>
planOverlap(const tile::For &f, const PipelinePlan &plan,
            const std::map<int, analysis::FragmentLayout> &fragments) {
  if (!plan.warpSpecialized || plan.gemmInFlight || plan.itersPerSlot != 1 || plan.stages < 2)
    return std::nullopt;
  const std::set<int> ring = ringBuffers(plan);
  const std::vector<const tile::Stmt *> body = nonCopyStatements(f, plan);
  if (body.size() < 2)
    return std::nullopt;
  auto *last = std::get_if<tile::Gemm>(&body.back()->op);
  if (!last || last->clearAccum || !onWgmma(*last, fragments))
    return std::nullopt;
  // A in registers as wgmma reads them (not staged through shared memory), B in a ring slot.
  const tile::BufferPtr &a = last->a.buffer, &b = last->b.buffer;
  std::set<int> registers = {last->c.buffer->id};
  if (a->scope == tile::Scope::Fragment) {
    auto la = fragments.find(a->id);
    if (la == fragments.end() ||
        !analysis::wgmmaTakesAInRegisters(la->second, fragments.at(last->c.buffer->id)))
      return std::nullopt;
    registers.insert(a->id);
  } else if (a->scope != tile::Scope::Shared || !ring.count(a->id)) {
    return std::nullopt;
  }
  if (b->scope != tile::Scope::Shared || !ring.count(b->id))
    return std::nullopt;
  // It is lowered with another iteration's loop variable: it may not read any variable.
  Refs own;
  own.stmt(*body.back());
  if (!own.vars.empty())
    return std::nullopt;
  auto touches = [&](const tile::Stmt *st) {
    Refs r;
    r.stmt(*st);
    return std::any_of(registers.begin(), registers.end(),
                       [&](int id) { return r.buffers.count(id) > 0; });
  };
  size_t issueAfter = body.size();
  for (size_t i = body.size() - 1; i-- > 0;) {
    auto *g = std::get_if<tile::Gemm>(&body[i]->op);
    if (g && onWgmma(*g, fragments)) {
      issueAfter = i;
      break;
    }
  }
  if (issueAfter == body.size())
    return std::nullopt;
  Refs head; // what the iteration runs before the tail of the previous one
  for (size_t i = 0; i <= issueAfter; ++i) {
    if (touches(body[i]))
      return std::nullopt;
    head.stmt(*body[i]);
  }
  // The statements before the gemm that only compute in registers, read no variable of the
  // loop and neither write what the head touches nor read what it writes (the output's
  // rescale) move with it.
  size_t tail = body.size() - 1;
  while (tail > issueAfter + 1) {
    const tile::Stmt *st = body[tail - 1];
    Refs r;
    r.stmt(*st);
    bool movable =
        !std::holds_alternative<tile::Gemm>(st->op) && onlyRegisters(*st) &&
        std::includes(r.assignedVars.begin(), r.assignedVars.end(), r.vars.begin(), r.vars.end());
    for (int b : r.writtenBuffers)
      movable = movable && !head.buffers.count(b);
    for (int b : r.buffers)
      movable = movable && !head.writtenBuffers.count(b);
    if (!movable)
      break;
    --tail;
  }
  PipelinePlan::GemmOverlap o{
      {body.begin() + static_cast<std::ptrdiff_t>(tail), body.end()}, body[issueAfter], nullptr};
  for (size_t i = issueAfter + 1; i < tail && !o.waitBefore; ++i)
    if (touches(body[i]))
      o.waitBefore = body[i];
  // Nothing to overlap: the rotated gemm would be waited for right after it is issued.
  if (o.waitBefore == body[issueAfter + 1])
    return std::nullopt;
  Refs late; // what the tail reads, and what the rest of the body after the head reads
  for (size_t i = tail; i < body.size(); ++i)
    late.stmt(*body[i]);
  Refs middle;
  for (size_t i = issueAfter + 1; i < tail; ++i)
    middle.stmt(*body[i]);
  std::vector<const tile::Stmt *> early, lateCopies;
  for (const tile::Stmt *c : plan.copies) {
    int id = std::get<tile::Copy>(c->op).dst.buffer->id;
    if (middle.buffers.count(id) || (head.buffers.count(id) && late.buffers.count(id)))
      return o;
    (late.buffers.count(id) ? lateCopies : early).push_back(c);
  }
  if (!early.empty() && !lateCopies.empty())
    o.lateCopies = std::move(lateCopies);
  return o;
}

/// Whether the turns pay for a loop fit for them and not given the overlap by default: where
/// the loop reduces rows (a softmax) while every gemm gives each warp whole rows of its product
/// (GemmWarpPolicy.FullRow), so that what a warpgroup computes beside its gemms needs nothing
/// of the other's. Measured on the H100 (docs/results.md, 2026-12-06): bf16 attention at head
/// dimension 64, whose two warpgroups otherwise run their softmaxes at once, 3-4% faster causal
/// and 5.5-7.6% not causal at S2048-4096 (1.7-2% at S1024). MLA decode's FullCol softmax
/// exchanges rows between the warpgroups every iteration, and a GEMM loop with work beside its
/// gemm (the W4A16 large-M sample's dequantization) was not measured with them.
bool turnsPay(const tile::For &f) {
  bool gemm = false, reduce = false;
  for (const tile::Stmt &st : f.body) {
    if (auto *g = std::get_if<tile::Gemm>(&st.op)) {
      if (g->policy != tile::GemmPolicy::FullRow)
        return false;
      gemm = true;
    }
    reduce = reduce || std::holds_alternative<tile::Reduce>(st.op);
  }
  return gemm && reduce;
}

/// Whether an overlap planOverlap found is planned by default (GemmOverlap::Auto): when its
/// rotated gemm is at least kMinOverlapColumns wide. It hides that gemm behind the next
/// iteration's work at the cost of a second register set for the operand it rotates and its
/// waits; attention's P@V at head dimension 128 is worth it (fp16 D128 S4096 on an H100: +13.6%,
/// causal +9.7%; on the H200 +1% to +5.6%, causal -3.7% to +4.2% across runs), at 64 it is not
/// (bf16 D64 causal: -1% to -2% on both GPUs; docs/results.md, 2026-12-05 late).
bool overlapPays(const PipelinePlan::GemmOverlap &o) {
  constexpr int64_t kMinOverlapColumns = 128;
  const std::vector<tile::Expr> shape = std::get<tile::Gemm>(o.gemm().op).c.shape();
  auto columns = shape.size() == 2 ? tile::asConstInt(shape[1]) : std::nullopt;
  return columns && *columns >= kMinOverlapColumns;
}

/// Whether the statements after a GEMM loop touch only the block's own registers and global
/// memory, with nothing that synchronizes or shares memory between threads (an epilogue:
/// element-wise loops over the accumulator, copies of it to global memory).
bool computesApart(const tile::Body &body);
bool computesApart(const tile::Stmt &st) {
  return std::visit(
      tile::Overloaded{
          [](const tile::Let &) { return true; },
          [](const tile::Store &) { return true; },
          [](const tile::Copy &) { return true; },
          [](const tile::Fill &) { return true; },
          [](const tile::For &f) { return computesApart(f.body); },
          [](const tile::If &i) { return computesApart(i.then) && computesApart(i.otherwise); },
          [](const auto &) { return false; },
      },
      st.op);
}
bool computesApart(const tile::Body &body) {
  return std::all_of(body.begin(), body.end(),
                     [](const tile::Stmt &st) { return computesApart(st); });
}

/// PipelinePlan::tileGroups for GEMM loop `s` of kernel `k`: two groups of one warpgroup each
/// fit in a block beside the producer, shared memory holds only the loop's tiles (each group's
/// epilogue would need its own scratch otherwise), no code numbers threads itself, every tile runs
/// the same iterations (a group's place in the rings is counted from its tile's index), and the
/// statements after the loop compute apart.
int tileGroupsFor(const tile::Kernel &k, const tile::Stmt &s, const tile::For &f,
                  const target::TargetInfo &t, const PipelinePlan &plan) {
  constexpr int kGroups = 2;
  if (!plan.gemmInFlight || !plan.consumerPrologue.empty() || plan.reusesBuffers ||
      !k.threadIndices.empty() || (kGroups + 1) * kProducerThreads > t.maxThreadsPerBlock)
    return 1;
  const std::set<int> ring = ringBuffers(plan);
  for (const tile::BufferPtr &b : k.buffers)
    if (b->scope == tile::Scope::Shared && !ring.count(b->id))
      return 1;
  std::set<int> dims;
  for (const tile::VarPtr &d : k.dims)
    dims.insert(d->id);
  Refs bounds;
  bounds.expr(f.begins[0]);
  bounds.expr(f.extents[0]);
  for (int v : bounds.vars)
    if (!dims.count(v))
      return 1;
  bool after = false;
  for (const tile::Stmt &st : k.body) {
    if (after && !computesApart(st))
      return 1;
    after = after || &st == &s;
  }
  return kGroups;
}

/// Lays the fragments of `k` out over one warpgroup, the threads of a tile in a group
/// (KernelPlan::tileThreads), when they allow it and each thread then holds at most 128 of
/// their elements (a 128x128 float32 accumulator: more would spill).
bool layOutForGroups(const tile::Kernel &k, const target::TargetInfo &t, KernelPlan &kp) {
  constexpr int64_t kThreads = kProducerThreads, kMaxSlots = 128;
  std::map<int, analysis::FragmentLayout> fragments = kp.fragments;
  if (k.threads != kThreads) {
    // A layout the kernel's threads allow may not exist for fewer: then no groups, quietly.
    SourceManager sm;
    DiagnosticEngine quiet(sm);
    fragments.clear();
    if (!analysis::inferFragmentLayouts(k, quiet, {t.hasWgmma, kThreads, !t.mfmaShapes.empty()},
                                        fragments))
      return false;
  }
  int64_t slots = 0;
  for (const auto &[id, l] : fragments)
    slots += l.slots();
  if (slots > kMaxSlots)
    return false;
  kp.fragments = std::move(fragments);
  kp.tileThreads = kThreads;
  return true;
}

/// Warp specialization (PipelinePlan::warpSpecialized) for the loop `s` of kernel `k`.
/// Makes `plan` warp-specialized where the loop allows it; otherwise returns why not.
std::string specialize(const tile::Kernel &k, const tile::Stmt &s, const tile::For &f,
                       const target::TargetInfo &t, const PlanOptions &opts, KernelPlan &kp,
                       PipelinePlan &plan) {
  if (!t.hasTma || !t.hasWgmma)
    return fmt::format("{} has no TMA and wgmma", t.arch);
  if (k.threads % kProducerThreads != 0 || k.threads + kProducerThreads > t.maxThreadsPerBlock)
    return fmt::format("a producer warpgroup needs the block's {} threads to be whole "
                       "warpgroups and {} more to fit in a block",
                       k.threads, kProducerThreads);
  int gemms = 0, others = 0;
  for (const tile::Stmt &st : f.body) {
    if (std::find(plan.copies.begin(), plan.copies.end(), &st) != plan.copies.end() ||
        std::find(plan.lets.begin(), plan.lets.end(), &st) != plan.lets.end())
      continue;
    (std::holds_alternative<tile::Gemm>(st.op) ? gemms : others)++;
  }
  // A loop without a gemm is bound by memory: cp.async in every thread keeps as many loads in
  // flight without a producer warpgroup's threads and registers, and more blocks fit an SM
  // (measured: a two-pass RMSNorm ran at 28-43% of the copy bandwidth warp-specialized).
  if (gemms == 0)
    return "the loop has no gemm: cp.async in every thread keeps as many loads in flight";
  std::vector<TmaDims> tmaDims;
  for (const tile::Stmt *c : plan.copies) {
    auto dims = tmaCopyable(std::get<tile::Copy>(c->op));
    if (!dims)
      return fmt::format("TMA cannot write the copy at {}:{} (a tensor of 2-5 dimensions whose "
                         "tile keeps two, the innermost one last, into a whole 2-D shared buffer "
                         "of the same dtype in a layout TMA writes)",
                         c->loc.line, c->loc.col);
    tmaDims.push_back(*dims);
  }
  // The loop is a statement of the kernel's body. Before it come value bindings and cleared
  // registers (run in every thread) and copies from global memory into shared buffers the loop
  // does not fill (run by the consumers before their loop, so after the bindings: none of those
  // may rebind what such a copy reads).
  const std::set<int> ring = ringBuffers(plan);
  std::set<int> readByConsumers;
  std::vector<const tile::Stmt *> consumerPrologue;
  bool found = false;
  for (const tile::Stmt &st : k.body) {
    if (&st == &s) {
      found = true;
      break;
    }
    Refs r;
    r.stmt(st);
    if (runsInEveryThread(st)) {
      for (int v : r.assignedVars)
        if (readByConsumers.count(v))
          return fmt::format("the statement at {}:{} before the loop rebinds what a copy "
                             "before it reads",
                             st.loc.line, st.loc.col);
      continue;
    }
    auto *c = std::get_if<tile::Copy>(&st.op);
    if (!c || c->src.buffer->scope != tile::Scope::Global ||
        c->dst.buffer->scope != tile::Scope::Shared || ring.count(c->dst.buffer->id))
      return fmt::format("the statement at {}:{} before the loop is neither a value binding, a "
                         "cleared register nor a copy into a shared buffer the loop does not fill",
                         st.loc.line, st.loc.col);
    consumerPrologue.push_back(&st);
    readByConsumers.insert(r.vars.begin(), r.vars.end());
  }
  if (!found)
    return "the loop is inside another statement, not a statement of the kernel's body";
  plan.warpSpecialized = true;
  plan.tmaDims = std::move(tmaDims);
  plan.consumerPrologue = std::move(consumerPrologue);
  for (const tile::Stmt *st : plan.consumerPrologue)
    if (auto dims = tmaCopyable(std::get<tile::Copy>(st->op)); dims && opts.tmaPrologue)
      plan.prologueTmaDims.push_back(*dims);
  if (plan.prologueTmaDims.size() != plan.consumerPrologue.size())
    plan.prologueTmaDims.clear();
  plan.gemmInFlight = gemms == 1 && others == 0;
  if (gemms == 1 && others > 0)
    if (auto produced = planProducedOperands(k, s, f, plan, kp.fragments)) {
      plan.gemmInFlight = true;
      plan.producedOperands = std::move(*produced);
    }
  // With one stage a turn held from one iteration's last gemm to the next's first would also
  // hold the wait for the next slot, which the other warpgroup has yet to release.
  plan.pingPong = k.threads == 2 * kProducerThreads && others > 0 && plan.stages > 1 &&
                  plan.producedOperands.empty();
  // A slot of at least 32 KiB of tiles (what CUTLASS's 128x128x64 16-bit stages hold).
  int64_t bytes = 0;
  for (const tile::Stmt *c : plan.copies) {
    const tile::BufferPtr &b = std::get<tile::Copy>(c->op).dst.buffer;
    int64_t n = dtypeBytes(b->dtype);
    for (const tile::Expr &d : b->shape)
      n *= *tile::asConstInt(d);
    bytes += n;
  }
  constexpr int64_t kSlotBytes = 32 * 1024, kMaxItersPerSlot = 4;
  // A produced operand's two versions serve one iteration each: every iteration waits for the
  // group before its own, which iterations sharing a slot would not.
  plan.itersPerSlot = plan.producedOperands.empty()
                          ? static_cast<int>(std::clamp<int64_t>(
                                kSlotBytes / std::max<int64_t>(bytes, 1), 1, kMaxItersPerSlot))
                          : 1;
  // By default a loop gets the overlap where it pays, else the turns where they pay.
  auto overlap = planOverlap(f, plan, kp.fragments);
  const bool overlapByDefault = overlap && overlapPays(*overlap);
  if (overlap && (opts.overlapGemms == GemmOverlap::On ||
                  (opts.overlapGemms == GemmOverlap::Auto && overlapByDefault)))
    plan.overlap = std::move(overlap);
  plan.turns =
      plan.pingPong &&
      (opts.pingPong == PingPong::On ||
       (opts.pingPong == PingPong::Auto && !plan.overlap && !overlapByDefault && turnsPay(f)));
  if (opts.pingPongTiles) {
    int groups = tileGroupsFor(k, s, f, t, plan);
    if (groups > 1 && layOutForGroups(k, t, kp))
      plan.tileGroups = groups;
  }
  return "";
}

void planLoops(const tile::Kernel &k, const tile::Body &body, const target::TargetInfo &t,
               const PlanOptions &opts, KernelPlan &kp) {
  for (const tile::Stmt &s : body) {
    if (auto *i = std::get_if<tile::If>(&s.op)) {
      planLoops(k, i->then, t, opts, kp);
      planLoops(k, i->otherwise, t, opts, kp);
      continue;
    }
    auto *f = std::get_if<tile::For>(&s.op);
    if (!f)
      continue;
    planLoops(k, f->body, t, opts, kp);
    // Sema accepted order=/stage= only where they ask for this plan (or for no pipelining,
    // with numStages 1).
    if (f->kind != tile::LoopKind::Pipelined || f->numStages < 2 || f->step)
      continue;
    // Without asynchronous copies (AMD) a pipelined loop runs as a serial one.
    if (!t.hasCpAsync) {
      kp.unpipelined.push_back({&s, fmt::format("{} has no asynchronous copies", t.arch), {}});
      continue;
    }
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
    plan.loop = &s;
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
          c->dst.buffer->scope != tile::Scope::Shared)
        continue;
      const std::string &name = c->dst.buffer->name;
      if (!c->dst.whole()) {
        plan.copiesNotAhead.emplace_back(
            &st, fmt::format("it fills part of '{}': only whole shared buffers are", name));
        continue;
      }
      int dst = c->dst.buffer->id;
      Refs r;
      r.stmt(st);
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
      bool reused = outside.buffers.count(dst) > 0;
      std::string why =
          reused && !deadOutside(k.body, s, dst)
              ? fmt::format("'{}' is used after the loop while the copy would fill it", name)
          : writers != 1               ? fmt::format("the body writes '{}' elsewhere too", name)
          : readsChanging              ? "it reads a buffer the body writes"
          : !isStable(r.vars, letVars) ? "its indices read a variable the body changes"
                                       : std::string();
      if (!why.empty()) {
        plan.copiesNotAhead.emplace_back(&st, std::move(why));
        continue;
      }
      plan.reusesBuffers = plan.reusesBuffers || reused;
      plan.copies.push_back(&st);
    }
    if (plan.copies.empty()) {
      kp.unpipelined.push_back({&s,
                                "no copy from a global tensor into a shared buffer in its body can "
                                "be issued ahead",
                                std::move(plan.copiesNotAhead)});
      continue;
    }
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
    bool specializedAlready = std::any_of(kp.pipelines.begin(), kp.pipelines.end(),
                                          [](const auto &p) { return p.second.warpSpecialized; });
    plan.notSpecialized = specializedAlready ? "another loop of the kernel is warp-specialized"
                                             : specialize(k, s, *f, t, opts, kp, plan);
    kp.pipelines[f] = std::move(plan);
    countVersions(kp);
  }
}

} // namespace

void countVersions(KernelPlan &kp) {
  kp.stagesOf.clear();
  for (const auto &[loop, p] : kp.pipelines) {
    for (const tile::Stmt *c : p.copies) {
      int &v = kp.stagesOf[std::get<tile::Copy>(c->op).dst.buffer->id];
      v = std::max(v, p.versions());
    }
    for (int id : p.producedOperands) {
      int &v = kp.stagesOf[id];
      v = std::max(v, 2);
    }
  }
}

void planPipelines(const tile::Program &p, const target::TargetInfo &t, ProgramPlan &plan,
                   const PlanOptions &opts) {
  plan.kernels.resize(p.kernels.size());
  for (size_t i = 0; i < p.kernels.size(); ++i)
    planLoops(p.kernels[i], p.kernels[i].body, t, opts, plan.kernels[i]);
}

} // namespace tilec::lower
