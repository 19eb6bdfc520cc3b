"""bench_common.median_ms with a stand-in for torch.cuda: each call of the timed function takes
one simulated millisecond, plus a fixed 5 ms from each start event to the first call (the
host's launch latency, which a batch of back-to-back calls pays once). Prints the median for
batches of 1 and 4 and how many calls each made."""
import os
import sys

sys.path.insert(0, os.path.join(os.environ["SRCROOT"], "scripts"))
import bench_common  # noqa: E402

clock = [0.0]


class Event:
    def __init__(self, enable_timing=True):
        self.t = None

    def record(self):
        self.t = clock[0]
        clock[0] += 5.0  # the first call waits for the host

    def synchronize(self):
        pass

    def elapsed_time(self, other):
        return other.t - self.t


class Cuda:
    Event = Event

    @staticmethod
    def synchronize():
        pass


class Torch:
    cuda = Cuda


for batch in (1, 4):
    calls = [0]

    def fn():
        calls[0] += 1
        clock[0] += 1.0

    ms = bench_common.median_ms(Torch, fn, warmup=2, reps=20, batch=batch)
    print(f"batch {batch}: median {ms:.2f} ms, {calls[0]} calls")
