// Scheduling passes over thread IR: they reorder (or trim) work that is already correct so that
// the asynchronous units (the tensor cores behind wgmma) run beside the threads' own
// instructions. They change no result: only when an instruction is issued, how long a wait may
// lag, and which unit clears an accumulator.
#pragma once

#include "threadir/ThreadIR.h"

namespace tilec::schedule {

/// interleave-wgmma: a wgmma whose A operand is in registers and whose registers the statements
/// right before it compute (a dequantization or cast into the fragment) is split into one wgmma
/// per two instructions (a step), each issued as soon as the statements computing its registers
/// have run, leaving up to 7 groups in flight; the last waits for all, as the whole one did. The
/// tensor cores then multiply one k-step while the threads compute the next one's operand, as
/// CUTLASS's mixed-input mainloop does. Only wgmma of n >= 64 are split (each step costs a
/// warpgroup-wide fence). Only straight-line assignments are moved, and only
/// past statements they do not depend on; a wgmma that leaves groups pending or takes a
/// ping-pong turn is left whole.
void interleaveWgmma(thir::Module &m);

/// fold-accumulator-clears: zeros written to every accumulator of a wgmma right before it (the
/// clear of attention's scores before Q@K^T, on the unswitched loop's unmasked side too) become
/// the wgmma's own clear (thir::Wgmma::clearAcc, scale-d = 0): the threads no longer write them.
/// Only where nothing else reads the zeros: the wgmma's result overwrites every accumulator
/// variable before any other statement reads it.
void foldAccumulatorClears(thir::Module &m);

/// split-wgmma-chains: a wgmma of narrow instructions (n <= 32) that all accumulate into the same
/// lanes, complete when produced, deals its instructions round-robin to `chains` accumulator
/// chains in lanes of their own (the first keeps the accumulators, the others start at zero)
/// and sums the lanes after its wait, so that consecutive instructions do not wait for each
/// other's results. Off (chains < 2) unless asked for: level with the words kernel on an H100
/// (docs/results.md, session 54).
void splitWgmmaChains(thir::Module &m, int chains);

/// defer-wgmma-waits: in a run of wgmma that each wait for their own group (pending 0), where the
/// statements between them are register assignments that read none of the earlier ones'
/// results (W4A16 dequantized group by group into accumulators of their own), or where each
/// accumulates into exactly the one before's result (a stage's groups into one accumulator),
/// each but the last leaves its group in flight (wait_group 1) so that it multiplies while the
/// threads compute the next one's operand; a WgmmaWait after the last ties the independent
/// accumulators. Off unless asked for: on an H100 the W4A16 decode kernels it applies to are no
/// faster than the words kernel, which waits after one gemm a stage (docs/results.md, session 56).
void deferWgmmaWaits(thir::Module &m);

} // namespace tilec::schedule
