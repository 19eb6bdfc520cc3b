// Synchronization passes over thread IR: where lowering left shared-memory accesses that other
// threads depend on, these decide the barriers and async-proxy fences that order them, as
// analyses of the IR (in the manner of Triton's Membar) rather than as flags kept while emitting.
#pragma once

#include "threadir/ThreadIR.h"

namespace tilec::sync {

/// insert-barriers: adds a barrier (`bar.sync 0`, or the sync group's named barrier) wherever a
/// thread may read shared memory another thread wrote since the last barrier, or write what
/// another read (shared memory as one resource; two writes with no read between are not
/// ordered, as in TVM's ThreadSync), and a `fence.proxy.async` before the barrier where the
/// later access is an async-proxy read (wgmma) of generic writes no fence has covered. A barrier
/// goes right before the statement that needs it, or before the loop or branch around it that
/// the group's threads do not all run alike (inside, each thread is taken to touch only what it
/// owns), or before a loop when what was pending at its entry is what needs it. Stores issued
/// ahead by a software pipeline, cp.async and TMA writes are left to the pipeline's own waits,
/// barriers and mbarriers, which lowering emits.
void insertBarriers(thir::Module &m);

/// elide-fences: removes each `fence.proxy.async` that fences nothing (no generic shared-memory
/// write since the previous fence on any path to it) or serves no one (no wgmma and no mbarrier
/// arrival, which may hand the data to another thread's async-proxy read, reachable before the
/// next fence).
void elideFences(thir::Module &m);

} // namespace tilec::sync
