// The planning passes and lower-to-thread-ir on programs given as strings: what each pass
// records in the KernelPlan, and that lowering follows the plan rather than deciding again.
#include "lower/Lower.h"
#include "lower/Plan.h"
#include "sema/Sema.h"
#include "syntax/Parser.h"

#include <doctest/doctest.h>

#include <map>
#include <string>
#include <variant>

using namespace tilec;

namespace {

/// A pipelined GEMM tile: two copies into shared memory per iteration, one gemm.
const char *kGemm = R"(
const block_M = 128
const block_N = 128
const block_K = 64
const STAGES = 3
@kernel
def mm(A: Tensor((M, K), float16), B: Tensor((K, N), float16), C: Tensor((M, N), float16)):
    with Kernel(ceildiv(N, block_N), ceildiv(M, block_M), threads=128) as (bx, by):
        A_s = alloc_shared((block_M, block_K), float16)
        B_s = alloc_shared((block_K, block_N), float16)
        acc = alloc_fragment((block_M, block_N), float32)
        clear(acc)
        for k in Pipelined(ceildiv(K, block_K), num_stages=STAGES):
            copy(A[by * block_M, k * block_K], A_s)
            copy(B[k * block_K, bx * block_N], B_s)
            gemm(A_s, B_s, acc)
        copy(acc, C[by * block_M, bx * block_N])
)";

struct Compiled {
  SourceManager sm;
  DiagnosticEngine diags{sm};
  std::optional<tile::Program> program;
};

void analyze(Compiled &c, const std::string &text, std::map<std::string, std::string> defines) {
  uint32_t file = c.sm.addBuffer("test.tile", text);
  auto module = parseModule(c.sm, file, c.diags);
  REQUIRE_MESSAGE(module, c.diags.renderAll());
  sema::Options so;
  so.stem = "test";
  so.defines = std::move(defines);
  c.program = sema::analyze(*module, c.sm, c.diags, so);
  REQUIRE_MESSAGE(c.program, c.diags.renderAll());
}

target::TargetInfo arch(const char *name) { return *target::targetInfo(name); }

int bufferId(const tile::Kernel &k, const std::string &name) {
  for (const tile::BufferPtr &b : k.buffers)
    if (b->name == name)
      return b->id;
  FAIL("no buffer " << name);
  return -1;
}

/// How many statements of each kind the thread IR holds, nested bodies included.
struct Counts {
  int cpAsync = 0, commit = 0, wait = 0, barrier = 0, fence = 0, tma = 0, mbarrierWait = 0;
  void body(const thir::Body &b) {
    for (const thir::Stmt &s : b) {
      tma += std::holds_alternative<thir::TmaLoad>(s.op);
      mbarrierWait += std::holds_alternative<thir::MbarrierWait>(s.op);
      cpAsync += std::holds_alternative<thir::CpAsync>(s.op);
      commit += std::holds_alternative<thir::CpAsyncCommit>(s.op);
      wait += std::holds_alternative<thir::CpAsyncWait>(s.op);
      barrier += std::holds_alternative<thir::Barrier>(s.op);
      fence += std::holds_alternative<thir::FenceProxyAsync>(s.op);
      if (auto *f = std::get_if<thir::ForStmt>(&s.op))
        body(f->body);
      if (auto *i = std::get_if<thir::IfStmt>(&s.op)) {
        body(i->then);
        body(i->otherwise);
      }
    }
  }
};

lower::ProgramPlan plan(Compiled &c, const target::TargetInfo &t) {
  lower::ProgramPlan p;
  REQUIRE(lower::inferLayouts(*c.program, t, c.diags, p));
  lower::planPipelines(*c.program, t, p);
  lower::planShared(*c.program, t, p, lower::Persistence::Gemm);
  return p;
}

} // namespace

TEST_CASE("infer-layouts: the gemm accumulator takes the target's instruction layout") {
  Compiled c;
  analyze(c, kGemm, {{"STAGES", "3"}});
  const tile::Kernel &k = c.program->kernels[0];
  int acc = bufferId(k, "acc");
  lower::ProgramPlan hopper, ampere;
  REQUIRE(lower::inferLayouts(*c.program, arch("sm_90a"), c.diags, hopper));
  REQUIRE(lower::inferLayouts(*c.program, arch("sm_80"), c.diags, ampere));
  CHECK(hopper.kernels[0].fragments.at(acc).warpgroup);
  CHECK_FALSE(ampere.kernels[0].fragments.at(acc).warpgroup);
  CHECK(hopper.kernels[0].fragments.at(acc).kind == analysis::FragmentLayout::Kind::MmaAccumulator);
}

TEST_CASE("plan-pipelines and plan-shared: stages, versions and offsets") {
  Compiled c;
  analyze(c, kGemm, {{"STAGES", "3"}});
  const tile::Kernel &k = c.program->kernels[0];
  lower::ProgramPlan p = plan(c, arch("sm_90a"));
  const lower::KernelPlan &kp = p.kernels[0];
  REQUIRE(kp.pipelines.size() == 1);
  const lower::PipelinePlan &pipe = kp.pipelines.begin()->second;
  CHECK(pipe.stages == 3);
  CHECK(pipe.copies.size() == 2);
  int a = bufferId(k, "A_s"), b = bufferId(k, "B_s");
  CHECK(kp.stagesOf.at(a) == 3);
  CHECK(kp.shared.at(a).offset == 0);
  CHECK(kp.shared.at(a).versions == 3);
  CHECK(kp.shared.at(a).layout.bytes() == 128 * 64 * 2);
  // B follows A's three versions, on the swizzle period.
  CHECK(kp.shared.at(b).offset == 3 * 128 * 64 * 2);
  CHECK(kp.shared.at(b).offset % arch("sm_90a").sharedBufferAlign == 0);
  // sm_90a: warp-specialized, the three full and three empty mbarriers after the buffers.
  CHECK(pipe.warpSpecialized);
  CHECK(pipe.gemmInFlight);
  CHECK(pipe.barrierOffset == kp.shared.at(b).offset + 3 * 64 * 128 * 2);
  CHECK(kp.scratchBase == pipe.barrierOffset + 6 * 8);
  lower::ProgramPlan ampere = plan(c, arch("sm_80"));
  CHECK_FALSE(ampere.kernels[0].pipelines.begin()->second.warpSpecialized);
}

TEST_CASE("plan-shared gives a pipeline fewer stages where the target's shared memory ends") {
  // 7 stages of 32 KiB: 224 KiB fits sm_90a's 227 KiB, not sm_80's 163 KiB (5 stages do).
  Compiled c;
  analyze(c, kGemm, {{"STAGES", "7"}});
  lower::ProgramPlan hopper = plan(c, arch("sm_90a")), ampere = plan(c, arch("sm_80"));
  CHECK(hopper.kernels[0].pipelines.begin()->second.stages == 7);
  REQUIRE(ampere.kernels[0].pipelines.size() == 1);
  CHECK(ampere.kernels[0].pipelines.begin()->second.stages == 5);
  CHECK(ampere.kernels[0].scratchBase <= arch("sm_80").sharedPerBlockOptin);
}

TEST_CASE("plan-pipelines leaves a copy alone when its buffer is read after the loop") {
  Compiled c;
  analyze(c, R"(
@kernel
def k(A: Tensor((N, 64), float32), B: Tensor((64,), float32)):
    with Kernel(1, threads=128) as bx:
        s = alloc_shared((64,), float32)
        for i in Pipelined(N, num_stages=2):
            copy(A[i, 0], s)
        copy(s, B[0])
)",
          {});
  lower::ProgramPlan p = plan(c, arch("sm_90a"));
  CHECK(p.kernels[0].pipelines.empty());
  CHECK(p.kernels[0].shared.begin()->second.versions == 1);
}

TEST_CASE("lower-to-thread-ir follows the plan: cp.async pipelines only where it says") {
  Compiled c;
  analyze(c, kGemm, {{"STAGES", "3"}});
  lower::Options opts;
  opts.target = arch("sm_90a");
  lower::ProgramPlan p = plan(c, opts.target);
  auto lowered = lower::lowerToThreadIR(*c.program, p, c.diags, opts);
  REQUIRE_MESSAGE(lowered, c.diags.renderAll());
  Counts ws;
  ws.body(lowered->module.kernels[0].body);
  CHECK(ws.tma == 3);          // A in one box, B's two 64-column panels in one box each
  CHECK(ws.mbarrierWait == 3); // producer: empty (TMA and plain paths); consumers: full
  CHECK(ws.cpAsync == 0);
  CHECK(lowered->module.kernels[0].threads == 128 + lower::kProducerThreads);
  CHECK(lowered->module.kernels[0].dynamicSharedBytes == p.kernels[0].scratchBase);

  // Not warp-specialized: the copies are issued ahead by cp.async in every thread.
  for (auto &[loop, pipe] : p.kernels[0].pipelines)
    pipe.warpSpecialized = false;
  lower::planShared(*c.program, opts.target, p, opts.persistence);
  lowered = lower::lowerToThreadIR(*c.program, p, c.diags, opts);
  REQUIRE_MESSAGE(lowered, c.diags.renderAll());
  Counts piped;
  piped.body(lowered->module.kernels[0].body);
  CHECK(piped.cpAsync > 0);
  CHECK(piped.tma == 0);
  CHECK(piped.commit == 3); // two in the prologue, one per iteration
  CHECK(piped.fence == 1);  // sm_90: once at the top of the pipelined body
  CHECK(lowered->module.kernels[0].threads == 128);

  // The same program with the pipeline taken out of the plan: plain copies, one version each.
  lower::ProgramPlan unpiped;
  REQUIRE(lower::inferLayouts(*c.program, opts.target, c.diags, unpiped));
  lower::planShared(*c.program, opts.target, unpiped, opts.persistence);
  auto plain = lower::lowerToThreadIR(*c.program, unpiped, c.diags, opts);
  REQUIRE_MESSAGE(plain, c.diags.renderAll());
  Counts flat;
  flat.body(plain->module.kernels[0].body);
  CHECK(flat.cpAsync == 0);
  CHECK(flat.commit == 0);
  CHECK(plain->module.kernels[0].dynamicSharedBytes < p.kernels[0].scratchBase);
}

TEST_CASE("lower-to-thread-ir on sm_80: no async-proxy fences") {
  Compiled c;
  analyze(c, kGemm, {{"STAGES", "2"}});
  lower::Options opts;
  opts.target = arch("sm_80");
  auto lowered = lower::lowerProgram(*c.program, c.diags, opts);
  REQUIRE_MESSAGE(lowered, c.diags.renderAll());
  Counts n;
  n.body(lowered->module.kernels[0].body);
  CHECK(n.cpAsync > 0);
  CHECK(n.fence == 0);
  CHECK(n.barrier > 0);
}

TEST_CASE("plan-shared shortens the first of two equal pipelines, whatever their addresses") {
  // Each loop versions a 32 KiB buffer 3 times: 192 KiB, over sm_80's 163 KiB; one loop at 2
  // stages (160 KiB) fits. The plan must not depend on where the loops sit in memory.
  Compiled c;
  analyze(c, R"(
@kernel
def k(A: Tensor((N, 128), float16), B: Tensor((N, 128), float16), R: Tensor((128,), float32)):
    with Kernel(1, threads=128) as bx:
        s1 = alloc_shared((128, 128), float16)
        s2 = alloc_shared((128, 128), float16)
        r = alloc_fragment((128,), float32)
        for i in Pipelined(ceildiv(N, 128), num_stages=3):
            copy(A[i * 128, 0], s1)
            reduce_sum(s1, r, dim=1)
        for j in Pipelined(ceildiv(N, 128), num_stages=3):
            copy(B[j * 128, 0], s2)
            reduce_sum(s2, r, dim=1, clear=False)
        copy(r, R[0])
)",
          {});
  const tile::Kernel &k = c.program->kernels[0];
  lower::ProgramPlan p = plan(c, arch("sm_80"));
  const lower::KernelPlan &kp = p.kernels[0];
  CHECK(kp.shared.at(bufferId(k, "s1")).versions == 2);
  CHECK(kp.shared.at(bufferId(k, "s2")).versions == 3);
  CHECK(kp.scratchBase <= arch("sm_80").sharedPerBlockOptin);
}
