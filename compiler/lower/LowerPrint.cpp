// print: device printf. A value is printed by every thread that runs the statement, a fragment
// by every thread for the elements it holds, a shared buffer and a region of a global tensor by
// thread 0 of each block; each line names the block (and thread) so that the interleaved output
// of a launch can be sorted out.
#include "lower/LowerImpl.h"

#include <fmt/format.h>

#include <stdexcept>

namespace tilec::lower::detail {

namespace {

std::string conversion(DType t) {
  if (isFloat(t))
    return "%.7g";
  return dtypeBits(t) > 32 ? "%lld" : "%d";
}

/// `msg` with '%' doubled, so that printf prints it as written.
std::string literal(const std::string &msg) {
  std::string out;
  for (char c : msg)
    out += c == '%' ? std::string("%%") : std::string(1, c);
  return out;
}

} // namespace

void KernelLowering::lowerPrint(const tile::Stmt &s, const tile::Print &p, thir::Body &out,
                                const LaneContext &lc) {
  // Parallel bodies with anything but element assignments are not vectorized.
  if (lc.lanes > 1)
    throw std::logic_error("print in a vectorized Parallel body");
  std::string prefix = p.message.empty() ? "" : literal(p.message) + ": ";
  std::vector<thir::Expr> args = {thir::special(thir::Special::BlockIdxX),
                                  thir::special(thir::Special::BlockIdxY),
                                  thir::special(thir::Special::BlockIdxZ)};
  thir::Expr tid = thread();
  prefix += "block (%d, %d, %d) ";
  if (!p.buffer) {
    thir::Expr v = lowerExpr(p.value, {});
    if (!v)
      return;
    args.push_back(tid);
    args.push_back(v);
    out.push_back({thir::Printf{prefix + "thread %d: " + conversion(v->type.elem) + "\n", args}});
    return;
  }
  const tile::BufferPtr &b = p.buffer->buffer;
  if (b->scope == tile::Scope::Global)
    return lowerPrintGlobal(*p.buffer, prefix, args, out);
  if (!fullBuffer(*p.buffer)) {
    unsupported(s.loc, fmt::format("print of a part of '{}' (whole shared buffers and fragments, "
                                   "and regions of global tensors, are supported)",
                                   b->name));
    return;
  }
  std::vector<int64_t> shape = constShape(b);
  std::string where = b->name + "[";
  for (size_t d = 0; d < shape.size(); ++d)
    where += d ? ", %d" : "%d";
  where += "] = " + conversion(b->dtype) + "\n";
  auto line = [&](std::vector<thir::Expr> head, const std::vector<thir::Expr> &idx,
                  thir::Expr value, const std::string &format) {
    head.insert(head.end(), idx.begin(), idx.end());
    head.push_back(value);
    return thir::Stmt{thir::Printf{format, std::move(head)}};
  };
  if (b->scope == tile::Scope::Shared) {
    int64_t total = 1;
    for (int64_t d : shape)
      total *= d;
    thir::ForStmt loop;
    loop.var = nextVar_++;
    loop.varType = Type{DType::Int32};
    loop.begin = i32(0);
    loop.end = i32(total);
    loop.step = i32(1);
    std::vector<thir::Expr> idx = unflatten(thir::var(loop.var, Type{DType::Int32}), shape);
    loop.body.push_back(
        line(args, idx, thir::sharedLoad(sharedOffset(b, idx), Type{b->dtype}, sharedRegion(b)),
             prefix + where));
    thir::IfStmt first;
    first.cond = thir::binary(thir::BinOp::Eq, tid, i32(0));
    first.then.push_back({std::move(loop)});
    out.push_back({std::move(first)});
    return;
  }
  // Fragment or local buffer: each thread its own slots.
  args.push_back(tid);
  const analysis::FragmentLayout &l = fragmentLayouts_.at(b->id);
  for (const ChunkRef &ch : chunksOf(l))
    for (int64_t lane = 0; lane < l.vector; ++lane) {
      thir::Stmt st = line(args, laneIndex(ch, lane), slotVar(b, ch.slot0 + lane),
                           prefix + "thread %d " + where);
      if (ch.guard)
        out.push_back({thir::IfStmt{ch.guard, {st}, {}}});
      else
        out.push_back(std::move(st));
    }
}

void KernelLowering::lowerPrintGlobal(const tile::Region &r, const std::string &prefix,
                                      const std::vector<thir::Expr> &head, thir::Body &out) {
  // Thread 0 walks the region's elements in row-major order, skipping those outside the
  // tensor; extents may be symbolic, so the walk is one int64 loop over the flat index.
  const tile::BufferPtr &b = r.buffer;
  const Type i64{DType::Int64};
  std::vector<thir::Expr> begins, extents, dims;
  for (size_t d = 0; d < r.dims.size(); ++d) {
    thir::Expr begin = lowerExpr(r.dims[d].begin, {});
    thir::Expr extent = lowerExpr(r.dims[d].extent, {});
    thir::Expr dim = lowerExpr(b->shape[d], {});
    if (!begin || !extent || !dim)
      return;
    begins.push_back(thir::cast(begin, i64));
    extents.push_back(thir::cast(extent, i64));
    dims.push_back(thir::cast(dim, i64));
  }
  thir::Expr total = thir::constInt(1, DType::Int64);
  for (const thir::Expr &e : extents)
    total = thir::binary(thir::BinOp::Mul, total, e);
  thir::ForStmt loop;
  loop.var = nextVar_++;
  loop.varType = i64;
  loop.begin = thir::constInt(0, DType::Int64);
  loop.end = total;
  loop.step = thir::constInt(1, DType::Int64);
  thir::Expr rest = thir::var(loop.var, i64), inside, offset;
  std::vector<thir::Expr> idx(r.dims.size());
  for (size_t d = r.dims.size(); d-- > 0;) {
    idx[d] =
        thir::binary(thir::BinOp::Add, begins[d], thir::binary(thir::BinOp::Mod, rest, extents[d]));
    rest = thir::binary(thir::BinOp::FloorDiv, rest, extents[d]);
    thir::Expr ok = thir::binary(
        thir::BinOp::And, thir::binary(thir::BinOp::Ge, idx[d], thir::constInt(0, DType::Int64)),
        thir::binary(thir::BinOp::Lt, idx[d], dims[d]));
    inside = inside ? thir::binary(thir::BinOp::And, inside, ok) : ok;
  }
  for (size_t d = 0; d < idx.size(); ++d)
    offset = offset ? thir::binary(thir::BinOp::Add,
                                   thir::binary(thir::BinOp::Mul, offset, dims[d]), idx[d])
                    : idx[d];
  const int bytes = dtypeBytes(b->dtype);
  noteAlign(b->paramIndex, bytes);
  std::string format = prefix + b->name + "[";
  std::vector<thir::Expr> args = head;
  for (size_t d = 0; d < idx.size(); ++d) {
    format += d ? ", %lld" : "%lld";
    args.push_back(idx[d]);
  }
  format += "] = " + conversion(b->dtype) + "\n";
  args.push_back(thir::globalLoad(b->paramIndex, offset, Type{b->dtype}, bytes));
  loop.body.push_back({thir::IfStmt{inside, {{thir::Printf{format, std::move(args)}}}, {}}});
  thir::IfStmt first;
  first.cond = thir::binary(thir::BinOp::Eq, thread(), i32(0));
  first.then.push_back({std::move(loop)});
  out.push_back({std::move(first)});
}

} // namespace tilec::lower::detail
