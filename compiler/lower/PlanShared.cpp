// plan-shared: where each alloc_shared buffer lives in dynamic shared memory. Buffers are
// placed in program order, each on TargetInfo::sharedBufferAlign (the swizzle period), with one
// version per stage of the pipeline that fills it, at the lowest offset where it overlaps no
// buffer live at the same time: a buffer only used after a loop (an epilogue's staging tile)
// takes the place of one only used before and in it (attention's Q tile). Lowering's scratch
// space follows them.
#include "lower/Plan.h"
#include "lower/Refs.h"

#include <algorithm>
#include <map>
#include <utility>

namespace tilec::lower {

namespace {

bool contains(const tile::Stmt &st, const tile::For *loop) {
  const tile::Body *bodies[2] = {nullptr, nullptr};
  if (const auto *f = std::get_if<tile::For>(&st.op)) {
    if (f == loop)
      return true;
    bodies[0] = &f->body;
  } else if (const auto *i = std::get_if<tile::If>(&st.op)) {
    bodies[0] = &i->then;
    bodies[1] = &i->otherwise;
  }
  for (const tile::Body *b : bodies)
    for (size_t n = 0; b && n < b->size(); ++n)
      if (contains((*b)[n], loop))
        return true;
  return false;
}

/// The first and last statement of the kernel's body that use each shared buffer (a buffer no
/// statement uses is live throughout). Lowering puts a barrier between a statement's shared
/// accesses and a later statement's writes, so two buffers whose ranges do not meet never hold
/// live data at once, except where copies are issued ahead: a pipeline's versions are written
/// without such a barrier (cp.async issued before the loop, a warp-specialized producer that
/// starts while the consumers still run the statements before the loop), so the buffers that
/// pipelines fill are live from the start of the kernel. They are dead after their loop (an
/// epilogue may stage its output there): a cp.async loop waits for all its copies after it,
/// and the consumers of a warp-specialized one have waited for every slot's load. Except where
/// the block walks tiles: its producer loads the next tile's slots during the epilogue, and
/// with prologuePerTile the next tile's prologue too.
std::map<int, std::pair<size_t, size_t>> liveRanges(const tile::Kernel &k, const KernelPlan &kp,
                                                    Persistence persistence) {
  std::map<int, std::pair<size_t, size_t>> live;
  for (size_t i = 0; i < k.body.size(); ++i) {
    Refs r;
    r.stmt(k.body[i]);
    for (int id : r.buffers)
      live.try_emplace(id, i, i).first->second.second = i;
  }
  const std::pair<size_t, size_t> always{0, k.body.empty() ? 0 : k.body.size() - 1};
  for (const auto &[loop, p] : kp.pipelines) {
    size_t end = always.second;
    for (size_t i = 0; i < k.body.size() && !walksTiles(p, persistence); ++i)
      if (contains(k.body[i], loop)) {
        end = i;
        break;
      }
    // The copy inside the loop recorded the buffer's uses already; a use after the loop keeps it.
    for (const tile::Stmt *c : p.copies) {
      auto &range = live[std::get<tile::Copy>(c->op).dst.buffer->id];
      range = {0, std::max(end, range.second)};
    }
    if (p.prologuePerTile)
      for (const tile::Stmt *c : p.consumerPrologue)
        live[std::get<tile::Copy>(c->op).dst.buffer->id] = always;
  }
  for (const tile::BufferPtr &b : k.buffers)
    if (b->scope == tile::Scope::Shared)
      live.try_emplace(b->id, always);
  return live;
}

/// Whether a statement of `k`'s body after the one holding `loop` uses the buffers that `copies`
/// fill.
bool readAfter(const tile::Kernel &k, const tile::For *loop,
               const std::vector<const tile::Stmt *> &copies) {
  size_t i = 0;
  while (i < k.body.size() && !contains(k.body[i], loop))
    ++i;
  for (size_t j = i + 1; j < k.body.size(); ++j) {
    Refs r;
    r.stmt(k.body[j]);
    for (const tile::Stmt *c : copies)
      if (r.buffers.count(std::get<tile::Copy>(c->op).dst.buffer->id))
        return true;
  }
  return false;
}

void planKernel(const tile::Kernel &k, const target::TargetInfo &t, KernelPlan &kp,
                Persistence persistence) {
  auto place = [&] {
    const auto live = liveRanges(k, kp, persistence);
    int64_t offset = 0;
    std::vector<const tile::BufferPtr *> placed;
    for (const tile::BufferPtr &b : k.buffers) {
      if (b->scope != tile::Scope::Shared)
        continue;
      SharedPlacement sb;
      const std::vector<int64_t> shape = constShape(b);
      sb.layout = analysis::chooseSharedLayout(shape, dtypeBytes(b->dtype));
      auto versions = kp.stagesOf.find(b->id);
      sb.versions = versions == kp.stagesOf.end() ? 1 : versions->second;
      const int64_t bytes = sb.layout.bytes() * sb.versions;
      // First fit among the buffers live at the same time (in placement order, so that the
      // result does not depend on anything but the program).
      auto [first, last] = live.at(b->id);
      int64_t at = 0;
      for (bool moved = true; moved;) {
        moved = false;
        at = alignUp(at, t.sharedBufferAlign);
        for (const tile::BufferPtr *o : placed) {
          auto [oFirst, oLast] = live.at((*o)->id);
          const SharedPlacement &os = kp.shared.at((*o)->id);
          const int64_t oEnd = os.offset + os.layout.bytes() * os.versions;
          if (oFirst <= last && first <= oLast && os.offset < at + bytes && at < oEnd) {
            at = oEnd;
            moved = true;
          }
        }
      }
      sb.offset = at;
      offset = std::max(offset, at + bytes);
      kp.shared[b->id] = sb;
      placed.push_back(&b);
    }
    // The full and empty mbarrier rings of warp-specialized loops, in source order.
    std::vector<PipelinePlan *> rings;
    for (auto &[loop, p] : kp.pipelines)
      if (p.warpSpecialized)
        rings.push_back(&p);
    std::sort(rings.begin(), rings.end(), [](const PipelinePlan *a, const PipelinePlan *b) {
      return sourcePosition(*a) < sourcePosition(*b);
    });
    for (PipelinePlan *p : rings) {
      p->barrierOffset = alignUp(offset, 8);
      offset = p->prologueBarrier() + (p->producerLoadsPrologue() ? 8 : 0) +
               (p->prologuePerTile ? 8 : 0);
    }
    return alignUp(offset, 16);
  };
  for (auto &[loop, p] : kp.pipelines)
    p.prologuePerTile = walksTiles(p, persistence) && p.producerLoadsPrologue() &&
                        p.tileGroups <= 1 && !readAfter(k, loop, p.consumerPrologue);
  kp.scratchBase = place();
  // Prologue buffers kept live throughout may not fit: then the consumers load each tile's
  // prologue themselves, as where the producer does not, before any stage is given up.
  if (kp.scratchBase > t.sharedPerBlockOptin) {
    bool perTile = false;
    for (auto &[loop, p] : kp.pipelines)
      perTile = std::exchange(p.prologuePerTile, false) || perTile;
    if (perTile)
      kp.scratchBase = place();
  }
  // Buffer versions for software pipelines must fit beside everything else: fewer stages
  // (down to 2), then no pipelining, for the loop with the most versioned bytes first (the
  // first in the source among equals).
  while (kp.scratchBase > t.sharedPerBlockOptin && !kp.pipelines.empty()) {
    auto bytesOf = [&](const PipelinePlan &p) {
      int64_t bytes = 0;
      for (const tile::Stmt *c : p.copies)
        bytes += kp.shared.at(std::get<tile::Copy>(c->op).dst.buffer->id).layout.bytes() *
                 (p.stages - 1) * p.itersPerSlot;
      return bytes;
    };
    auto largest = kp.pipelines.begin();
    for (auto it = kp.pipelines.begin(); it != kp.pipelines.end(); ++it) {
      int64_t b = bytesOf(it->second), most = bytesOf(largest->second);
      if (b > most || (b == most && sourcePosition(it->second) < sourcePosition(largest->second)))
        largest = it;
    }
    PipelinePlan &p = largest->second;
    if (p.stages > 2) {
      --p.stages;
    } else {
      kp.unpipelined.push_back({p.loop,
                                "its buffers' versions do not fit in shared memory beside the "
                                "kernel's other buffers",
                                p.copiesNotAhead});
      kp.pipelines.erase(largest);
    }
    countVersions(kp);
    kp.scratchBase = place();
  }
}

} // namespace

void planShared(const tile::Program &p, const target::TargetInfo &t, ProgramPlan &plan,
                Persistence persistence) {
  plan.kernels.resize(p.kernels.size());
  for (size_t i = 0; i < p.kernels.size(); ++i)
    planKernel(p.kernels[i], t, plan.kernels[i], persistence);
}

} // namespace tilec::lower
