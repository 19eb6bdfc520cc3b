// plan-shared: where each alloc_shared buffer lives in dynamic shared memory. Buffers are
// placed in program order, each on TargetInfo::sharedBufferAlign (the swizzle period), with one
// version per stage of the pipeline that fills it; lowering's scratch space follows them.
#include "lower/Plan.h"

#include <algorithm>

namespace tilec::lower {

namespace {

int64_t alignUp(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

void planKernel(const tile::Kernel &k, const target::TargetInfo &t, KernelPlan &kp) {
  auto place = [&] {
    int64_t offset = 0;
    for (const tile::BufferPtr &b : k.buffers) {
      if (b->scope != tile::Scope::Shared)
        continue;
      SharedPlacement sb;
      std::vector<int64_t> shape;
      for (const tile::Expr &d : b->shape)
        shape.push_back(*tile::asConstInt(d));
      sb.layout = analysis::chooseSharedLayout(shape, dtypeBytes(b->dtype));
      sb.offset = alignUp(offset, t.sharedBufferAlign);
      auto versions = kp.stagesOf.find(b->id);
      sb.versions = versions == kp.stagesOf.end() ? 1 : versions->second;
      offset = sb.offset + sb.layout.bytes() * sb.versions;
      kp.shared[b->id] = sb;
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
      offset = p->barrierOffset + 16 * p->stages;
    }
    return alignUp(offset, 16);
  };
  kp.scratchBase = place();
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
    if (p.stages > 2)
      --p.stages;
    else
      kp.pipelines.erase(largest);
    countVersions(kp);
    kp.scratchBase = place();
  }
}

} // namespace

void planShared(const tile::Program &p, const target::TargetInfo &t, ProgramPlan &plan) {
  plan.kernels.resize(p.kernels.size());
  for (size_t i = 0; i < p.kernels.size(); ++i)
    planKernel(p.kernels[i], t, plan.kernels[i]);
}

} // namespace tilec::lower
