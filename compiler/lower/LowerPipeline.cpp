// Lowering of the software pipelines plan-pipelines chose (PlanPipelines.cpp has the rules):
//
//   prologue:   for s < S - 1: if s < n: issue(s); commit
//   iteration i: wait until the group of i is complete; barrier (everyone's copies for i
//                landed, everyone is done reading the version issue(i + S - 1) overwrites);
//                if i + S - 1 < n: issue(i + S - 1); commit; the body without the copies,
//                reading version i % S
//   epilogue:   wait for all groups
#include "lower/LowerImpl.h"

#include <fmt/format.h>

namespace tilec::lower::detail {

void KernelLowering::lowerPipelined(const tile::Stmt &s, const tile::For &f, thir::Body &out) {
  const PipelinePlan &plan = pipelines_.at(&f);
  const int S = plan.stages;
  thir::Expr begin = lowerExpr(f.begins[0], {}), extent = lowerExpr(f.extents[0], {});
  if (!begin || !extent)
    return;
  Type i32t{DType::Int32};
  begin = thir::cast(begin, i32t);
  if (plan.reusesBuffers) {
    // The prologue overwrites versions another loop's threads may still be reading.
    out.push_back(barrier());
  }
  int nVar = nextVar_++;
  out.push_back({thir::DeclVar{nVar, i32t, thir::cast(extent, i32t)}});
  thir::Expr n = thir::var(nVar, i32t);
  std::set<const tile::Stmt *> issued(plan.copies.begin(), plan.copies.end());
  auto at = [&](thir::Expr iteration) {
    bind(*f.vars[0], thir::binary(thir::BinOp::Add, begin, iteration));
    for (const tile::Stmt *c : plan.copies) {
      const tile::BufferPtr &b = std::get<tile::Copy>(c->op).dst.buffer;
      thir::Expr version = S == 1 ? i32(0) : thir::binary(thir::BinOp::Mod, iteration, i32(S));
      stageOffset_[b->id] =
          thir::binary(thir::BinOp::Mul, version, i32(shared_.at(b->id).layout.bytes()));
    }
  };
  // Issues the copies of `iteration` (when it exists) and closes their commit group.
  auto issue = [&](thir::Expr iteration, thir::Body &body) {
    at(iteration);
    thir::IfStmt exists;
    exists.cond = thir::binary(thir::BinOp::Lt, iteration, n);
    for (const tile::Stmt *l : plan.lets)
      lowerStmt(*l, exists.then, {});
    asyncCopies_ = true;
    for (const tile::Stmt *c : plan.copies)
      lowerStmt(*c, exists.then, {});
    asyncCopies_ = false;
    body.push_back({std::move(exists)});
    body.push_back({thir::CpAsyncCommit{}});
  };
  for (int st = 0; st + 1 < S; ++st)
    issue(i32(st), out);

  thir::ForStmt loop = countingLoop(nextVar_++, n);
  thir::Expr it = thir::var(loop.var, i32t);
  loop.body.push_back({thir::CpAsyncWait{S - 2}});
  // On sm_90 the copies are also made visible to wgmma (the async proxy) here, once for the
  // whole body.
  bool asyncProxy = opts_.target.hasAsyncProxyFence;
  if (asyncProxy)
    loop.body.push_back({thir::FenceProxyAsync{}});
  loop.body.push_back(barrier());
  // The issued copies write versions this iteration does not read.
  issue(thir::binary(thir::BinOp::Add, it, i32(S - 1)), loop.body);
  at(it);
  std::optional<Interval> r;
  auto b0 = tile::asConstInt(f.begins[0]), n0 = tile::asConstInt(f.extents[0]);
  if (b0 && n0)
    r = Interval{*b0, *b0 + std::max<int64_t>(*n0 - 1, 0)};
  bind(*f.vars[0], thir::binary(thir::BinOp::Add, begin, it), r);
  for (const tile::Stmt &st : f.body) {
    if (failed_)
      return;
    if (!issued.count(&st))
      lowerStmt(st, loop.body, {});
  }
  out.push_back({std::move(loop)});
  out.push_back({thir::CpAsyncWait{0}});
  for (const tile::Stmt *c : plan.copies)
    stageOffset_.erase(std::get<tile::Copy>(c->op).dst.buffer->id);
  (void)s;
}

} // namespace tilec::lower::detail
