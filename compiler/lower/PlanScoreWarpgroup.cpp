// plan-score-warpgroup: in MLA's loop, both gemms are split over the two consumer warpgroups by
// columns (GemmWarpPolicy.FullCol). For the scores that reads Q from shared memory twice and
// makes their row maxima an exchange through shared memory, with the warpgroups in step. A
// gemm chain into a fragment of one warpgroup's 64 rows can instead run on warpgroup 0 alone
// (one m64n64 wgmma a k-step), with the statements that follow from its result (the softmax's
// Parallel loops and reductions), as long as what the rest of the loop reads of them are row
// values (published through shared memory) and the operand of a gemm of both warpgroups (P,
// handed over). A policy only splits work, so the result is the same. Measured as a thread-IR
// prototype in session 49: MLA decode +10%, MLA split +4-5% (docs/results.md); the design of
// the lowering is in docs/architecture.md.
//
// Besides deciding, the pass lays the fragments of the scores' shape that warpgroup 0 computes
// out again over its 128 threads (the accumulator of one m64n64 wgmma, warpsN 1), and takes
// scratch space for the hand-over: a shared copy of each row value both warpgroups read and of a
// handed-over fragment, and two mbarriers. The row values keep their layout: restricted to
// warpgroup 0, the rows its threads hold are those of the new layout (FragmentLayout::rowsOf).
#include "lower/Plan.h"
#include "lower/Refs.h"

#include <fmt/format.h>

#include <algorithm>

namespace tilec::lower {

namespace {

using analysis::FragmentLayout;

/// The accumulator of a wgmma over two warpgroups split by columns, of one warpgroup's rows.
bool columnSplitOfOneWarpgroup(const FragmentLayout &l) {
  return l.kind == FragmentLayout::Kind::MmaAccumulator && l.warpgroup && l.shape.size() == 2 &&
         l.shape[0] == 64 && l.warpsM == 4 && l.warpsN == 2;
}

const tile::Gemm *gemmInto(const tile::Stmt &s, int c) {
  auto *g = std::get_if<tile::Gemm>(&s.op);
  return g && g->c.buffer->id == c ? g : nullptr;
}

bool sharedOperands(const tile::Gemm &g) {
  return g.a.buffer->scope == tile::Scope::Shared && g.b.buffer->scope == tile::Scope::Shared;
}

std::optional<ScoreWarpgroup> scoreWarpgroupOf(const tile::Kernel &k, const KernelPlan &kp,
                                               size_t top) {
  const tile::Stmt &loopStmt = k.body[top];
  auto &loop = std::get<tile::For>(loopStmt.op);
  auto pipeline = kp.pipelines.find(&loop);
  // One loop per consumer warpgroup, each iteration waiting for its slot and releasing it: no
  // ping-pong turns, overlap, gemm left in flight or slot shared by several iterations.
  if (pipeline == kp.pipelines.end() || k.threads != 256 || kp.tileThreads != 0)
    return std::nullopt;
  const PipelinePlan &pp = pipeline->second;
  if (!pp.warpSpecialized || pp.turns || pp.overlap || pp.gemmInFlight || pp.itersPerSlot != 1)
    return std::nullopt;
  auto issued = [&](const tile::Stmt &s) {
    return std::find(pp.copies.begin(), pp.copies.end(), &s) != pp.copies.end();
  };
  const tile::Body &body = loop.body;
  // The chain: a clearing gemm into such an accumulator from shared operands, and the gemms
  // right after it that add into the same accumulator.
  size_t first = 0;
  for (; first < body.size(); ++first) {
    auto *g = std::get_if<tile::Gemm>(&body[first].op);
    if (g && g->clearAccum && g->policy == tile::GemmPolicy::FullCol && sharedOperands(*g) &&
        g->c.whole() && kp.fragments.count(g->c.buffer->id) &&
        columnSplitOfOneWarpgroup(kp.fragments.at(g->c.buffer->id)))
      break;
  }
  if (first == body.size())
    return std::nullopt;
  ScoreWarpgroup sw;
  sw.loop = &loopStmt;
  sw.scores = std::get<tile::Gemm>(body[first].op).c.buffer;
  const int c = sw.scores->id;
  const FragmentLayout lc = kp.fragments.at(c);
  size_t end = first;
  for (; end < body.size(); ++end) {
    auto *g = gemmInto(body[end], c);
    if (!g || (end > first && g->clearAccum) || !sharedOperands(*g))
      break;
    sw.chain.push_back(&body[end]);
  }
  sw.owned = sw.chain;
  if (std::any_of(body.begin() + static_cast<std::ptrdiff_t>(first),
                  body.begin() + static_cast<std::ptrdiff_t>(end),
                  [&](const tile::Stmt &s) { return issued(s); }))
    return std::nullopt;
  // What follows from the scores: statements that read what warpgroup 0 computes and write only
  // fragments laid out as the scores are (which the pass lays out again with them), row values
  // of its rows, or shared buffers.
  std::set<int> owned{c};
  std::set<int> published, handedOver;
  auto rowValues = [&](int b) {
    auto it = kp.fragments.find(b);
    return it != kp.fragments.end() && it->second.rowValues() && it->second.rowsOf(lc);
  };
  auto ownable = [&](const tile::BufferPtr &b) {
    if (b->scope == tile::Scope::Shared)
      return true;
    if (b->scope != tile::Scope::Fragment || !kp.fragments.count(b->id))
      return false;
    return rowValues(b->id) || kp.fragments.at(b->id).sameAs(lc);
  };
  auto bufferOf = [&](int id) -> tile::BufferPtr {
    for (const tile::BufferPtr &b : k.buffers)
      if (b->id == id)
        return b;
    return nullptr;
  };
  // Warpgroup 0's statements read what it computes (in this iteration or, through the loop's
  // back edge, in the last: `copy(m, m_prev)` before `reduce_max(acc_s, m)`) and write only
  // what it may own: grown to a fixpoint over the body.
  auto mine = [&](const Refs &r) {
    return !r.writtenBuffers.empty() && std::any_of(r.buffers.begin(), r.buffers.end(), [&](int b) {
      return owned.count(b) > 0;
    }) && std::all_of(r.writtenBuffers.begin(), r.writtenBuffers.end(), [&](int b) {
      tile::BufferPtr buf = bufferOf(b);
      return buf && ownable(buf);
    });
  };
  for (size_t before = 0; before != owned.size();) {
    before = owned.size();
    for (size_t i = end; i < body.size(); ++i) {
      Refs r;
      r.stmt(body[i]);
      if (mine(r))
        owned.insert(r.writtenBuffers.begin(), r.writtenBuffers.end());
    }
  }
  // Warpgroup 0's statements come first, then those of both (where it hands over).
  sw.handOffAt = body.size();
  for (size_t i = end; i < body.size(); ++i) {
    if (issued(body[i]))
      continue;
    Refs r;
    r.stmt(body[i]);
    if (mine(r)) {
      if (sw.handOffAt != body.size())
        return std::nullopt;
      sw.owned.push_back(&body[i]);
      continue;
    }
    sw.handOffAt = std::min(sw.handOffAt, i);
    // A statement of both warpgroups: what it reads of warpgroup 0's must be row values, or the
    // A operand of a gemm (P, staged through shared memory for the other warpgroup).
    auto *g = std::get_if<tile::Gemm>(&body[i].op);
    for (int b : r.buffers) {
      if (!owned.count(b))
        continue;
      if (r.writtenBuffers.count(b))
        return std::nullopt; // both warpgroups would write what warpgroup 0 owns
      if (rowValues(b))
        published.insert(b);
      else if (g && g->a.buffer->id == b)
        handedOver.insert(b);
      else
        return std::nullopt;
    }
  }
  if (sw.handOffAt == body.size())
    return std::nullopt;
  // Before the scores, nothing touches what warpgroup 0 computes (the scores included):
  // warpgroup 1 would not have it.
  for (size_t i = 0; i < first; ++i) {
    Refs r;
    r.stmt(body[i]);
    for (int b : r.buffers)
      if (owned.count(b))
        return std::nullopt;
  }
  // After the loop, only row values of warpgroup 0's may be read (the running max, the sum).
  std::set<int> after;
  for (size_t t = top + 1; t < k.body.size(); ++t) {
    Refs r;
    r.stmt(k.body[t]);
    for (int b : r.buffers)
      if (owned.count(b)) {
        if (!rowValues(b))
          return std::nullopt;
        after.insert(b);
      }
  }
  // A handed-over fragment goes through a shared copy that wgmma reads (P): 16-bit, 2-D, with a
  // swizzled layout (what gemm's own staging of a fragment operand asks for).
  for (int b : handedOver) {
    tile::BufferPtr buf = bufferOf(b);
    if (buf->scope == tile::Scope::Shared) {
      sw.handedOver.push_back({buf, buf});
      continue;
    }
    if (buf->shape.size() != 2 || dtypeBytes(buf->dtype) != 2)
      return std::nullopt;
    sw.handedOver.push_back({buf, nullptr});
  }
  for (int b : published)
    sw.published.push_back({bufferOf(b), nullptr});
  for (int b : after)
    sw.publishedAfter.push_back({bufferOf(b), nullptr});
  sw.firstHandedWrite = body.size();
  for (size_t i = end; i < sw.handOffAt; ++i) {
    Refs r;
    r.stmt(body[i]);
    for (const ScoreWarpgroup::Handover &h : sw.handedOver)
      if (h.shared && r.writtenBuffers.count(h.shared->id))
        sw.firstHandedWrite = std::min(sw.firstHandedWrite, i);
  }
  return sw;
}

/// The first buffer id no kernel of `p` uses.
int nextBufferId(const tile::Program &p) {
  int next = 0;
  for (const tile::Kernel &k : p.kernels)
    for (const tile::BufferPtr &b : k.buffers)
      next = std::max(next, b->id + 1);
  return next;
}

/// Lays out warpgroup 0's fragments of the scores' shape over its threads and places the shared
/// copies and mbarriers of the hand-over after the kernel's other shared memory. False (the plan
/// unchanged) when they do not fit.
bool placeHandover(const target::TargetInfo &t, KernelPlan &kp, ScoreWarpgroup &sw, int &nextId) {
  int64_t at = kp.scratchBase;
  auto add = [&](const tile::BufferPtr &value, const std::string &name,
                 std::vector<int64_t> shape) {
    auto b = std::make_shared<tile::Buffer>();
    b->id = nextId++;
    b->name = name;
    b->scope = tile::Scope::Shared;
    for (int64_t d : shape)
      b->shape.push_back(tile::intImm(d));
    b->dtype = value->dtype;
    b->loc = value->loc;
    SharedPlacement sp;
    sp.layout = analysis::chooseSharedLayout(shape, dtypeBytes(value->dtype));
    at = alignUp(at, sp.layout.swizzleBytes ? t.sharedBufferAlign : 16);
    sp.offset = at;
    at += sp.layout.bytes();
    sw.placements[b->id] = sp;
    return tile::BufferPtr(b);
  };
  for (ScoreWarpgroup::Handover &h : sw.handedOver)
    if (!h.shared) {
      h.shared = add(h.value, h.value->name + ".handover", constShape(h.value));
      if (sw.placements.at(h.shared->id).layout.swizzleBytes == 0)
        return false;
    }
  for (auto *list : {&sw.published, &sw.publishedAfter})
    for (ScoreWarpgroup::Handover &h : *list)
      h.shared = add(h.value, h.value->name + ".handover", constShape(h.value));
  at = alignUp(at, 8);
  sw.readyBarrier = at;
  sw.freeBarrier = at + 8;
  at = alignUp(at + 16, 16);
  if (at > t.sharedPerBlockOptin)
    return false;
  kp.scratchBase = at;
  // Gemms of both warpgroups read a handed-over fragment's shared copy.
  const auto &body = std::get<tile::For>(sw.loop->op).body;
  for (size_t i = sw.handOffAt; i < body.size(); ++i) {
    auto *g = std::get_if<tile::Gemm>(&body[i].op);
    if (!g)
      continue;
    for (const ScoreWarpgroup::Handover &h : sw.handedOver)
      if (h.shared != h.value && g->a.buffer == h.value) {
        tile::Stmt s = body[i];
        std::get<tile::Gemm>(s.op).a = tile::wholeRegion(h.shared, g->a.loc);
        sw.rewritten.emplace(&body[i], std::move(s));
      }
  }
  return true;
}

} // namespace

void planScoreWarpgroups(const tile::Program &p, const target::TargetInfo &t, ProgramPlan &plan) {
  int nextId = nextBufferId(p);
  for (size_t ki = 0; ki < p.kernels.size(); ++ki) {
    const tile::Kernel &k = p.kernels[ki];
    KernelPlan &kp = plan.kernels[ki];
    kp.scoreWarpgroups.clear();
    for (size_t top = 0; top < k.body.size(); ++top) {
      auto *loop = std::get_if<tile::For>(&k.body[top].op);
      if (!loop || loop->kind == tile::LoopKind::Parallel)
        continue;
      auto sw = scoreWarpgroupOf(k, kp, top);
      if (!sw || !placeHandover(t, kp, *sw, nextId))
        continue;
      // Warpgroup 0's fragments of the scores' shape: one m64nN wgmma accumulator a k-step.
      for (const tile::Stmt *s : sw->owned) {
        Refs r;
        r.stmt(*s);
        for (int b : r.writtenBuffers) {
          auto it = kp.fragments.find(b);
          if (it == kp.fragments.end() || it->second.rowValues())
            continue;
          it->second.threads = 128;
          it->second.warpsN = 1;
          it->second.fixedBy = "plan-score-warpgroup";
          it->second.fixedAt = sw->chain.front()->loc;
        }
      }
      kp.scoreWarpgroups.push_back(std::move(*sw));
    }
  }
}

} // namespace tilec::lower
