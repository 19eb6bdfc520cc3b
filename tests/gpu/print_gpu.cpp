// print from tests/gpu/kernels/printing.tile: the device printf output, captured from this
// process's stdout, must hold every shared element once per block, every fragment element once
// per block (from whichever thread holds it), the value from every thread, and each block's
// region of the global tensor once, with the values the kernel was given.
#include "gpu_common.h"
#include "printing.h"

#include <fcntl.h>
#include <map>
#include <string>
#include <tuple>
#include <unistd.h>

using namespace gputest;

int main() {
  init();
  std::mt19937 rng = freshRng();
  std::uniform_int_distribution<int> dist(-1000, 1000);
  std::vector<float> x(8);
  for (float &v : x)
    v = dist(rng) / 8.0f; // exact in %.7g
  DeviceBuffer dx = upload(x);

  // Send fd 1 to a file while the kernel runs; the driver writes printf output at the sync.
  std::fflush(stdout);
  char path[] = "/tmp/tilec-print-XXXXXX";
  int fd = mkstemp(path);
  int saved = dup(1);
  dup2(fd, 1);
  CK(tile::printing::printing(nullptr, dx));
  CK(cuCtxSynchronize());
  std::fflush(stdout);
  dup2(saved, 1);
  close(saved);
  close(fd);

  std::map<std::tuple<std::string, int, int, int>, int> seen; // (kind, block, i, j) -> count
  int bad = 0, lines = 0;
  FILE *f = std::fopen(path, "r");
  char buf[512];
  while (f && std::fgets(buf, sizeof buf, f)) {
    ++lines;
    int bx, by, bz, t, i, j;
    float v;
    if (std::sscanf(buf, "shared: block (%d, %d, %d) s[%d, %d] = %g", &bx, &by, &bz, &i, &j, &v) ==
        6) {
      bad += v != x[i * 4 + j];
      ++seen[{"shared", bx, i, j}];
    } else if (std::sscanf(buf, "frag: block (%d, %d, %d) thread %d f[%d, %d] = %g", &bx, &by, &bz,
                           &t, &i, &j, &v) == 7) {
      bad += v != x[i * 4 + j];
      ++seen[{"frag", bx, i, j}];
    } else if (std::sscanf(buf, "value 100%%: block (%d, %d, %d) thread %d: %d", &bx, &by, &bz, &t,
                           &i) == 5) {
      bad += i != bx * 10 + 1;
      ++seen[{"value", bx, t, 0}];
    } else if (long long gi, gj; std::sscanf(buf, "global: block (%d, %d, %d) X[%lld, %lld] = %g",
                                             &bx, &by, &bz, &gi, &gj, &v) == 6) {
      // Block b prints row b, columns 1 and 2.
      bad += gi != bx || gj < 1 || gj > 2 || v != x[gi * 4 + gj];
      ++seen[{"global", bx, static_cast<int>(gi), static_cast<int>(gj)}];
    } else {
      std::printf("unexpected line: %s", buf);
      ++bad;
    }
  }
  if (f)
    std::fclose(f);
  std::remove(path);
  for (int b = 0; b < 2; ++b) {
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 4; ++j)
        bad += (seen[{"shared", b, i, j}] != 1) + (seen[{"frag", b, i, j}] != 1);
    for (int t = 0; t < 32; ++t)
      bad += seen[{"value", b, t, 0}] != 1;
    for (int j = 1; j <= 2; ++j)
      bad += seen[{"global", b, b, j}] != 1;
  }
  const int expected = 2 * (8 + 8 + 32 + 2);
  bool ok = bad == 0 && lines == expected;
  std::printf("print: %d lines captured (expected %d), %d problems: %s\n", lines, expected, bad,
              ok ? "ok" : "FAIL");
  return verdict("print", !ok);
}
