// copy between global memory, shared memory and fragments. Every copy with a global end is one
// walk over the on-chip tile's chunks (its fragment layout, or a coalesced walk of a shared
// tile): a 16-byte access when the chunk is in bounds and aligned, masked element accesses
// otherwise.
#include "lower/LowerImpl.h"

#include "tileir/Arith.h"

#include <fmt/format.h>

#include <stdexcept>

namespace tilec::lower::detail {

namespace {

using analysis::FragmentLayout;

bool vectorizable(int lanes, DType t) {
  int bytes = lanes * dtypeBytes(t);
  return lanes > 1 && bytes <= 16 && (bytes & (bytes - 1)) == 0;
}

} // namespace

KernelLowering::TileEnd KernelLowering::fragmentEnd(const tile::BufferPtr &b) {
  TileEnd e;
  e.layout = &fragmentLayouts_.at(b->id);
  e.dtype = b->dtype;
  e.read = [this, b](const ChunkRef &c, int64_t lane) { return slotVar(b, c.slot0 + lane); };
  e.write = [this, b](const ChunkRef &c, int64_t lane, thir::Expr v, thir::Body &body) {
    body.push_back(
        {thir::AssignVar{slotVars_.at(b->id).at(c.slot0 + lane), thir::cast(v, Type{b->dtype})}});
  };
  return e;
}

KernelLowering::TileEnd KernelLowering::sharedEnd(const tile::BufferPtr &b,
                                                  const FragmentLayout &walk) {
  TileEnd e;
  e.layout = &walk;
  e.dtype = b->dtype;
  e.smemOffset = [this, b](const ChunkRef &c) { return sharedOffset(b, c.index); };
  int v = walk.vector;
  const thir::SmemRegion region = sharedRegion(b);
  e.read = [this, b, region](const ChunkRef &c, int64_t lane) {
    return thir::sharedLoad(sharedOffset(b, laneIndex(c, lane)), Type{b->dtype}, region);
  };
  // A pipeline's copies issued ahead write versions its own protocol orders.
  e.write = [this, b, region](const ChunkRef &c, int64_t lane, thir::Expr v, thir::Body &body) {
    body.push_back({thir::SharedStore{sharedOffset(b, laneIndex(c, lane)),
                                      thir::cast(v, Type{b->dtype}), asyncCopies_, region}});
  };
  if (vectorizable(v, b->dtype)) {
    e.readVector = [this, b, v, region](const ChunkRef &c) {
      return thir::sharedLoad(sharedOffset(b, c.index), Type{b->dtype, v}, region);
    };
    e.writeVector = [this, b, region](const ChunkRef &c, thir::Expr vec, thir::Body &body) {
      body.push_back({thir::SharedStore{sharedOffset(b, c.index), vec, asyncCopies_, region}});
    };
  }
  return e;
}

std::optional<KernelLowering::TileChecks> KernelLowering::tileChecks(const tile::Region &glob,
                                                                     int vector) {
  const tile::BufferPtr &g = glob.buffer;
  TileChecks checks;
  thir::Expr start = thir::constInt(0);
  for (size_t d = 0; d < glob.dims.size(); ++d) {
    const tile::RegionDim &rd = glob.dims[d];
    thir::Expr b = lowerExpr(rd.begin, {}), e = lowerExpr(rd.extent, {});
    thir::Expr n = lowerExpr(g->shape[d], {});
    if (!b || !e || !n)
      return std::nullopt;
    b = thir::cast(b, Type{DType::Int64});
    e = rd.dropped ? thir::constInt(1) : thir::cast(e, Type{DType::Int64});
    n = thir::cast(n, Type{DType::Int64});
    if (range(rd.begin).lo < 0)
      checks.inBounds.push_back(thir::binary(thir::BinOp::Ge, b, thir::constInt(0)));
    checks.inBounds.push_back(
        thir::binary(thir::BinOp::Le, thir::binary(thir::BinOp::Add, b, e), n));
    // Chunks are 16-byte aligned when the tile's first element and every row start are.
    start = thir::binary(thir::BinOp::Add, thir::binary(thir::BinOp::Mul, start, n), b);
  }
  checks.aligned.push_back(
      thir::binary(thir::BinOp::Eq, thir::binary(thir::BinOp::Mod, start, thir::constInt(vector)),
                   thir::constInt(0)));
  if (glob.dims.size() > 1) {
    thir::Expr row = thir::cast(lowerExpr(g->shape.back(), {}), Type{DType::Int64});
    checks.aligned.push_back(
        thir::binary(thir::BinOp::Eq, thir::binary(thir::BinOp::Mod, row, thir::constInt(vector)),
                     thir::constInt(0)));
  }
  return checks;
}

void KernelLowering::copyGlobal(const tile::Stmt &s, const tile::Region &glob, const TileEnd &chip,
                                bool toGlobal, thir::Body &out, std::optional<AtomicOp> atomic) {
  const FragmentLayout &l = *chip.layout;
  // Synthetic variables walk the tile's elements; the global indices follow the region.
  std::vector<tile::VarPtr> walker;
  for (size_t d = 0; d < l.shape.size(); ++d)
    walker.push_back(
        std::make_shared<tile::Var>(tile::Var{-1000 - static_cast<int>(d), fmt::format("e{}", d),
                                              DType::Int32, tile::VarKind::LoopVar, s.loc, 0}));
  std::vector<tile::Expr> globalIdx;
  size_t k = 0;
  for (const tile::RegionDim &d : glob.dims) {
    if (d.dropped)
      globalIdx.push_back(d.begin);
    else
      globalIdx.push_back(
          tile::makeBinary(tile::BinOp::Add, d.begin, tile::varRef(walker.at(k++), s.loc)));
  }
  const tile::BufferPtr &gbuf = glob.buffer;
  int gparam = gbuf->paramIndex;
  DType gt = gbuf->dtype;
  int gbytes = dtypeBytes(gt);
  thir::Expr tid = thread();
  // Replicated data is stored once; the row layouts' condition is the same for every chunk.
  thir::Expr writer;
  if (toGlobal && l.kind != FragmentLayout::Kind::Replicated)
    writer = soleWriter(l, 0, tid);
  auto element = [&](const ChunkRef &c, int64_t lane, thir::Body &body) {
    thir::Expr off = offset(gbuf, globalIdx, {});
    thir::Expr ok = inBounds({gbuf, globalIdx}, {}, 0);
    if (!off || !ok)
      return;
    bool always = std::holds_alternative<thir::ConstInt>(ok->op);
    if (!toGlobal) {
      thir::Expr safe = always ? off : thir::select(ok, off, thir::constInt(0));
      thir::Expr v = thir::globalLoad(gparam, safe, Type{gt}, gbytes);
      if (!always)
        v = thir::select(ok, v, zeroOf(gt));
      chip.write(c, lane, v, body);
      return;
    }
    thir::Expr value = thir::cast(chip.read(c, lane), Type{gt});
    thir::Stmt st = atomic ? thir::Stmt{thir::GlobalAtomic{gparam, off, value, *atomic}}
                           : thir::Stmt{thir::GlobalStore{gparam, off, value, gbytes}};
    if (always) {
      body.push_back(std::move(st));
      return;
    }
    thir::IfStmt g;
    g.cond = ok;
    g.then.push_back(std::move(st));
    body.push_back({std::move(g)});
  };
  bool lastMoves = !glob.dims.back().dropped;
  int64_t v = l.vector;
  bool vectorPath = v > 1 && lastMoves && vectorizable(static_cast<int>(v), gt) && !atomic;
  bool async = !toGlobal && vectorPath && asyncCopies_ && chip.smemOffset && v * gbytes == 16 &&
               chip.dtype == gt;
  // What is known of the tile when its chunks are emitted. Checked: nothing, each chunk tests
  // whether it is inside and aligned. TileOk: the whole tile is in bounds and 16-byte aligned,
  // so no chunk tests anything (the common case; per-chunk checks cost registers that fragments
  // need). For cp.async, TileAligned: every chunk is 16-byte aligned, so each is one cp.async of
  // the bytes it has inside the tensor, with no test; TileUnaligned: the tile is not, so each
  // chunk is a cp.async of its bytes inside where it is aligned and element by element where not.
  enum class Known { Checked, TileOk, TileAligned, TileUnaligned };
  auto emitChunks = [&](thir::Body &out, Known known) {
    bool tileOk = known == Known::TileOk, tileAligned = known == Known::TileAligned;
    for (const ChunkRef &ch : chunksOf(l)) {
      if (failed_)
        return;
      thir::Body *target = &out;
      thir::IfStmt guard;
      thir::Expr cond = ch.guard;
      if (toGlobal && l.kind == FragmentLayout::Kind::Replicated)
        cond = conj(cond, soleWriter(l, ch.slot0, tid));
      cond = conj(cond, writer);
      if (cond) {
        guard.cond = cond;
        target = &guard.then;
      }
      if (vectorPath) {
        // Lane 0 addresses the whole vector: in bounds and aligned -> one access.
        bindChunk(walker, ch, 0);
        thir::Expr off = offset(gbuf, globalIdx, {});
        thir::Expr ok = inBounds({gbuf, globalIdx}, {}, static_cast<int>(v - 1));
        if (!off || !ok)
          return;
        thir::Expr aligned =
            thir::binary(thir::BinOp::Eq, thir::binary(thir::BinOp::Mod, off, thir::constInt(v)),
                         thir::constInt(0));
        int align = static_cast<int>(v) * gbytes;
        noteAlign(gparam, align);
        // A chunk that the tensor's edge cuts (or leaves out) is still copied ahead, reading the
        // bytes inside and zero-filling the rest (with the tensor's start as the address when
        // nothing is read).
        auto zeroFilled = [&]() -> std::optional<thir::Stmt> {
          thir::Expr inside = bytesInside({gbuf, globalIdx}, static_cast<int>(v), gbytes);
          if (!inside)
            return std::nullopt;
          thir::Expr safe =
              thir::select(thir::binary(thir::BinOp::Gt, inside, thir::constInt(0, DType::Int32)),
                           off, thir::constInt(0));
          return thir::Stmt{thir::CpAsync{gparam, safe, chip.smemOffset(ch), inside}};
        };
        // ... of the whole chunk where it is aligned, else element by element.
        auto zeroFilledOrElements = [&]() -> std::optional<thir::IfStmt> {
          std::optional<thir::Stmt> copy = zeroFilled();
          if (!copy)
            return std::nullopt;
          thir::IfStmt edge;
          edge.cond = aligned;
          edge.then.push_back(std::move(*copy));
          for (int64_t lane = 0; lane < v && !failed_; ++lane) {
            bindChunk(walker, ch, lane);
            element(ch, lane, edge.otherwise);
          }
          return edge;
        };
        if (tileAligned || known == Known::TileUnaligned) {
          std::optional<thir::Stmt> copy =
              tileAligned ? zeroFilled() : std::optional<thir::Stmt>(zeroFilledOrElements());
          if (!copy)
            return;
          target->push_back(std::move(*copy));
          if (cond)
            out.push_back({std::move(guard)});
          continue;
        }
        thir::IfStmt split;
        split.cond = thir::binary(thir::BinOp::And, ok, aligned);
        Type gv{gt, static_cast<int>(v)}, cv{chip.dtype, static_cast<int>(v)};
        if (async) {
          // Issued ahead by a software pipeline: straight to shared memory, no registers.
          split.then.push_back({thir::CpAsync{gparam, off, chip.smemOffset(ch)}});
        } else if (!toGlobal) {
          int vecVar = nextVar_++;
          split.then.push_back(
              {thir::DeclVar{vecVar, gv, thir::globalLoad(gparam, off, gv, align)}});
          thir::Expr vec = thir::var(vecVar, gv);
          if (chip.writeVector)
            chip.writeVector(ch, thir::cast(vec, cv), split.then);
          else
            for (int64_t lane = 0; lane < v; ++lane)
              chip.write(ch, lane, thir::extractLane(vec, static_cast<int>(lane)), split.then);
        } else {
          thir::Expr vec;
          if (chip.readVector) {
            vec = thir::cast(chip.readVector(ch), gv);
          } else {
            std::vector<thir::Expr> elems;
            for (int64_t lane = 0; lane < v; ++lane)
              elems.push_back(thir::cast(chip.read(ch, lane), Type{gt}));
            vec = thir::makeVector(std::move(elems));
          }
          split.then.push_back({thir::GlobalStore{gparam, off, vec, align}});
        }
        if (async) {
          std::optional<thir::IfStmt> edge = zeroFilledOrElements();
          if (!edge)
            return;
          split.otherwise.push_back({std::move(*edge)});
        } else {
          // A chunk wholly outside (at a width divisible by the vector, every one that fails)
          // is skipped, or zero, without a check per element.
          thir::IfStmt partial;
          partial.cond = inBounds({gbuf, globalIdx}, {}, 0, static_cast<int>(v - 1));
          if (!partial.cond)
            return;
          if (!toGlobal)
            for (int64_t lane = 0; lane < v; ++lane)
              chip.write(ch, lane, zeroOf(gt), partial.otherwise);
          for (int64_t lane = 0; lane < v && !failed_; ++lane) {
            bindChunk(walker, ch, lane);
            element(ch, lane, partial.then);
          }
          bindChunk(walker, ch, 0);
          split.otherwise.push_back({std::move(partial)});
        }
        if (tileOk)
          target->insert(target->end(), std::make_move_iterator(split.then.begin()),
                         std::make_move_iterator(split.then.end()));
        else
          target->push_back({std::move(split)});
      } else {
        for (int64_t lane = 0; lane < v && !failed_; ++lane) {
          bindChunk(walker, ch, lane);
          element(ch, lane, *target);
        }
      }
      if (cond)
        out.push_back({std::move(guard)});
    }
  };
  // For loads into shared memory (operand tiles) and stores of gemm accumulators, where the
  // registers matter; for the other fragments the per-chunk form measured faster (rmsnorm_silu
  // 96-97% vs 86-87% of the copy bandwidth with the whole-tile branch on its loads or stores).
  bool wholeTile =
      vectorPath && ((!toGlobal && chip.smemOffset) || (toGlobal && l.gemmAccumulator()));
  std::optional<TileChecks> checks;
  if (wholeTile)
    checks = tileChecks(glob, static_cast<int>(v));
  if (!checks)
    return emitChunks(out, Known::Checked);
  thir::IfStmt split;
  split.cond = checks->both();
  emitChunks(split.then, Known::TileOk);
  if (async) {
    // A tile the tensor's edge cuts (the ragged last chunk of a row, rows past M), aligned as
    // tiles of a row-major tensor whose rows are whole chunks are: a cp.async of the bytes
    // inside per chunk, with no test per chunk.
    thir::IfStmt aligned;
    aligned.cond = balancedAnd(checks->aligned);
    emitChunks(aligned.then, Known::TileAligned);
    emitChunks(aligned.otherwise, Known::TileUnaligned);
    split.otherwise.push_back({std::move(aligned)});
  } else {
    emitChunks(split.otherwise, Known::Checked);
  }
  out.push_back({std::move(split)});
}

thir::Expr KernelLowering::soleWriter(const FragmentLayout &l, int64_t slot, thir::Expr tid) {
  switch (l.kind) {
  case FragmentLayout::Kind::Replicated:
    // Element e by thread e % T.
    return thir::binary(thir::BinOp::Eq, tid, i32(slot % l.threads));
  case FragmentLayout::Kind::GroupReplicated:
    // A row by its group's first thread.
    if (l.groupThreads() == 1)
      return nullptr;
    return thir::binary(thir::BinOp::Eq, thir::binary(thir::BinOp::Mod, tid, i32(l.groupThreads())),
                        i32(0));
  case FragmentLayout::Kind::MmaRows:
  case FragmentLayout::Kind::MfmaRows: {
    // Lane 0 of each group of lanes sharing a row (an mma quad, an MFMA group of 16) in the
    // first warp of the warp row.
    int64_t rowLanes = l.kind == FragmentLayout::Kind::MfmaRows ? 16 : 4;
    thir::Expr w =
        thir::binary(thir::BinOp::Eq, thir::binary(thir::BinOp::Mod, tid, i32(rowLanes)), i32(0));
    if (l.warpsN > 1)
      w = thir::binary(thir::BinOp::And, w,
                       thir::binary(thir::BinOp::Eq, mmaWarp(l, thread()).col, i32(0)));
    return w;
  }
  case FragmentLayout::Kind::MmaOperandB:
    // The warps of a warp column hold the same elements: the first warp row writes them.
    if (l.warpsM == 1)
      return nullptr;
    return thir::binary(thir::BinOp::Eq, mmaWarp(l, thread()).row, i32(0));
  default:
    return nullptr;
  }
}

FragmentLayout KernelLowering::flatWalk(const tile::BufferPtr &b) const {
  FragmentLayout walk;
  walk.kind = FragmentLayout::Kind::Flat;
  walk.shape = constShape(b);
  walk.threads = tileThreads_;
  return walk;
}

thir::Expr KernelLowering::soleChunkWriter(const FragmentLayout &l, const ChunkRef &ch) {
  thir::Expr mine = soleWriter(l, ch.slot0, thread());
  if (!mine)
    return ch.guard;
  return ch.guard ? thir::binary(thir::BinOp::And, ch.guard, mine) : mine;
}

void KernelLowering::lowerAtomic(const tile::Stmt &s, const tile::Atomic &a, thir::Body &out) {
  const tile::BufferPtr &dst = a.dst.buffer;
  const bool shared = dst->scope == tile::Scope::Shared;
  if (dst->scope != tile::Scope::Global && !shared)
    throw std::logic_error("sema lets atomics write to global and shared buffers only");
  // Bools have no arithmetic, and codegen has no float8 arithmetic.
  if (dst->dtype == DType::Bool || dst->dtype == DType::Float8E4M3 ||
      dst->dtype == DType::Float8E5M2) {
    unsupported(s.loc, fmt::format("atomic_{} into {} tensor '{}'", atomicOpName(a.op),
                                   dtypeName(dst->dtype), dst->name));
    return;
  }
  if (shared && dtypeBytes(dst->dtype) < 2) {
    unsupported(s.loc, fmt::format("atomic_{} into {} shared buffer '{}' (shared atomics are 16, "
                                   "32 or 64 bits wide)",
                                   atomicOpName(a.op), dtypeName(dst->dtype), dst->name));
    return;
  }
  if (!a.src) {
    // The element form: inside a Parallel loop once per iteration, by the iteration's thread
    // (of an element that a replicated layout gives to several threads, by one of them);
    // outside, once per block, by thread 0, except in thread-level code (its index or value,
    // or an if or loop around it, differs between threads), where each thread runs it.
    thir::Expr v = lowerExpr(a.value, {});
    thir::Expr off, ok;
    if (shared) {
      if (auto at = sharedElement(dst, a.indices)) {
        off = at->first;
        ok = at->second ? at->second : thir::constInt(1, DType::Bool);
      }
    } else {
      off = offset(dst, a.indices, {});
      ok = inBounds({dst, a.indices}, {}, 0);
    }
    if (!v || !off || !ok)
      return;
    thir::Expr tid = thread();
    thir::Expr cond;
    bool perThread = threadBranches_ > 0 || variesByThread(a.value);
    for (const tile::Expr &i : a.indices)
      perThread = perThread || variesByThread(i);
    if (!inParallel_ && perThread) {
      if (auto *ci = std::get_if<thir::ConstInt>(&ok->op); !ci || !ci->value)
        cond = ok;
    } else if (!inParallel_) {
      cond = thir::binary(thir::BinOp::And, thir::binary(thir::BinOp::Eq, tid, i32(0)), ok);
    } else {
      cond = element_ ? soleWriter(*element_->layout, element_->slot, tid) : nullptr;
      if (auto *ci = std::get_if<thir::ConstInt>(&ok->op); !ci || !ci->value)
        cond = cond ? thir::binary(thir::BinOp::And, cond, ok) : ok;
    }
    v = thir::cast(v, Type{dst->dtype});
    thir::Stmt update = shared ? thir::Stmt{thir::SharedAtomic{off, v, a.op, sharedRegion(dst)}}
                               : thir::Stmt{thir::GlobalAtomic{dst->paramIndex, off, v, a.op}};
    if (!cond) {
      out.push_back(std::move(update));
      return;
    }
    thir::IfStmt guard;
    guard.cond = cond;
    guard.then.push_back(std::move(update));
    out.push_back({std::move(guard)});
    return;
  }
  const tile::Region &src = *a.src;
  if (!fullBuffer(src) || (!isOnChip(src.buffer) && src.buffer->scope != tile::Scope::Shared)) {
    unsupported(s.loc, fmt::format("atomic_{} from {} '{}' (a whole fragment or shared buffer is "
                                   "supported)",
                                   atomicOpName(a.op), tile::scopeName(src.buffer->scope),
                                   src.buffer->name));
    return;
  }
  if (shared) {
    atomicIntoShared(s, a, out);
    return;
  }
  if (isOnChip(src.buffer)) {
    copyGlobal(s, a.dst, fragmentEnd(src.buffer), /*toGlobal=*/true, out, a.op);
    return;
  }
  FragmentLayout walk = flatWalk(src.buffer);
  copyGlobal(s, a.dst, sharedEnd(src.buffer, walk), /*toGlobal=*/true, out, a.op);
}

void KernelLowering::atomicIntoShared(const tile::Stmt &s, const tile::Atomic &a, thir::Body &out) {
  const tile::BufferPtr &dst = a.dst.buffer, &src = a.src->buffer;
  // The region of `dst` the tile lands on: its start in every dimension, and the tile's
  // dimensions in the region's kept ones (sema matched their extents to the tile's shape).
  const std::vector<int64_t> dstShape = constShape(dst), srcShape = constShape(src);
  std::vector<thir::Expr> begin;
  std::vector<Interval> beginRange;
  std::vector<int64_t> kept;
  for (const tile::RegionDim &d : a.dst.dims) {
    begin.push_back(lowerExpr(d.begin, {}));
    beginRange.push_back(range(d.begin));
    std::optional<int64_t> extent = tile::asConstInt(d.extent);
    if (!d.dropped)
      kept.push_back(extent ? *extent : -1);
    if (!begin.back())
      return;
  }
  if (kept != srcShape)
    throw std::logic_error("sema matches an atomic's tile to the shape of its shared region");
  // Each element of the tile is added by the thread that holds it (a fragment) or that a walk
  // of the source buffer gives it; replicated values by one thread. Elements whose place falls
  // outside the buffer (a start known only at run time) are skipped.
  const FragmentLayout walk = flatWalk(src);
  const bool fromFragment = isOnChip(src);
  const FragmentLayout &l = fromFragment ? fragmentLayouts_.at(src->id) : walk;
  TileEnd from = fromFragment ? fragmentEnd(src) : sharedEnd(src, walk);
  const thir::SmemRegion region = sharedRegion(dst);
  for (const ChunkRef &ch : chunksOf(l)) {
    thir::Expr cond = soleChunkWriter(l, ch);
    thir::Body updates;
    for (int64_t lane = 0; lane < l.vector; ++lane) {
      std::vector<thir::Expr> tileIdx = laneIndex(ch, lane), at;
      thir::Expr inside;
      for (size_t d = 0, k = 0; d < begin.size(); ++d) {
        const bool dropped = a.dst.dims[d].dropped;
        at.push_back(dropped ? begin[d] : thir::binary(thir::BinOp::Add, begin[d], tileIdx[k]));
        const int64_t last = beginRange[d].hi + (dropped ? 0 : srcShape[k] - 1);
        if (!dropped)
          ++k;
        if (beginRange[d].lo >= 0 && last < dstShape[d])
          continue;
        thir::Expr ok =
            thir::binary(thir::BinOp::And, thir::binary(thir::BinOp::Le, i32(0), at.back()),
                         thir::binary(thir::BinOp::Lt, at.back(), i32(dstShape[d])));
        inside = inside ? thir::binary(thir::BinOp::And, inside, ok) : ok;
      }
      thir::Stmt update{thir::SharedAtomic{
          sharedOffset(dst, at), thir::cast(from.read(ch, lane), Type{dst->dtype}), a.op, region}};
      if (inside)
        updates.push_back({thir::IfStmt{inside, {std::move(update)}, {}}});
      else
        updates.push_back(std::move(update));
    }
    if (!cond) {
      for (thir::Stmt &u : updates)
        out.push_back(std::move(u));
      continue;
    }
    out.push_back({thir::IfStmt{cond, std::move(updates), {}}});
  }
}

void KernelLowering::lowerCopy(const tile::Stmt &s, const tile::Copy &c, thir::Body &out) {
  const tile::Region &src = c.src, &dst = c.dst;
  auto scope = [](const tile::Region &r) { return r.buffer->scope; };
  bool srcChip = isOnChip(src.buffer), dstChip = isOnChip(dst.buffer);
  bool srcShared = scope(src) == tile::Scope::Shared, dstShared = scope(dst) == tile::Scope::Shared;
  bool srcGlobal = scope(src) == tile::Scope::Global, dstGlobal = scope(dst) == tile::Scope::Global;
  auto refuse = [&](const std::string &why) {
    unsupported(s.loc,
                fmt::format("copy from {} '{}' to {} '{}'{}", tile::scopeName(scope(src)),
                            src.buffer->name, tile::scopeName(scope(dst)), dst.buffer->name, why));
  };
  const tile::Region &tileSide = (srcGlobal ? dst : src);
  if (!srcGlobal && !dstGlobal) {
    if (!fullBuffer(src) || !fullBuffer(dst))
      return refuse(" (parts of on-chip buffers)");
  } else if (!fullBuffer(tileSide)) {
    return refuse(" (a part of an on-chip buffer)");
  }
  if (srcChip && dstChip) {
    const FragmentLayout &ls = fragmentLayouts_.at(src.buffer->id);
    const FragmentLayout &ld = fragmentLayouts_.at(dst.buffer->id);
    if (!ls.sameAs(ld))
      return refuse(fmt::format(" between different fragment layouts ({} and {})", ls.describe(),
                                ld.describe()));
    for (int64_t i = 0; i < ls.slots(); ++i)
      out.push_back({thir::AssignVar{slotVars_.at(dst.buffer->id).at(i),
                                     thir::cast(slotVar(src.buffer, i), Type{dst.buffer->dtype})}});
    return;
  }
  if ((srcChip && dstGlobal) || (srcGlobal && dstChip)) {
    const tile::BufferPtr &chip = srcChip ? src.buffer : dst.buffer;
    copyGlobal(s, srcChip ? dst : src, fragmentEnd(chip), srcChip, out);
    return;
  }
  if ((srcShared && dstGlobal) || (srcGlobal && dstShared)) {
    const tile::BufferPtr &sh = srcShared ? src.buffer : dst.buffer;
    const tile::BufferPtr &gl = srcShared ? dst.buffer : src.buffer;
    // A coalesced walk of the shared tile: chunks of up to 16 bytes on both sides.
    FragmentLayout walk = flatWalk(sh);
    int v = 16 / std::max(dtypeBytes(sh->dtype), dtypeBytes(gl->dtype));
    while (v > 1 && walk.shape.back() % v != 0)
      v /= 2;
    walk.vector = v;
    copyGlobal(s, srcShared ? dst : src, sharedEnd(sh, walk), srcShared, out);
    return;
  }
  if ((srcChip && dstShared) || (srcShared && dstChip)) {
    const tile::BufferPtr &frag = srcChip ? src.buffer : dst.buffer;
    const tile::BufferPtr &sh = srcShared ? src.buffer : dst.buffer;
    if (constShape(frag) != constShape(sh))
      return refuse(" (different shapes)");
    const FragmentLayout &l = fragmentLayouts_.at(frag->id);
    TileEnd f = fragmentEnd(frag), m = sharedEnd(sh, l);
    for (const ChunkRef &ch : chunksOf(l)) {
      thir::Body *target = &out;
      thir::IfStmt guard;
      // Replicated values are written to shared memory once, by one thread.
      thir::Expr cond =
          srcChip && l.kind == FragmentLayout::Kind::Replicated ? soleChunkWriter(l, ch) : ch.guard;
      if (cond) {
        guard.cond = cond;
        target = &guard.then;
      }
      const TileEnd &from = srcChip ? f : m;
      const TileEnd &to = srcChip ? m : f;
      if (to.writeVector) {
        std::vector<thir::Expr> elems;
        for (int64_t lane = 0; lane < l.vector; ++lane)
          elems.push_back(thir::cast(from.read(ch, lane), Type{to.dtype}));
        to.writeVector(ch, thir::makeVector(std::move(elems)), *target);
      } else if (from.readVector) {
        int var = nextVar_++;
        Type vt{from.dtype, l.vector};
        target->push_back({thir::DeclVar{var, vt, from.readVector(ch)}});
        for (int64_t lane = 0; lane < l.vector; ++lane)
          to.write(ch, lane, thir::extractLane(thir::var(var, vt), static_cast<int>(lane)),
                   *target);
      } else {
        for (int64_t lane = 0; lane < l.vector; ++lane)
          to.write(ch, lane, from.read(ch, lane), *target);
      }
      if (cond)
        out.push_back({std::move(guard)});
    }
    return;
  }
  refuse("");
}

} // namespace tilec::lower::detail
