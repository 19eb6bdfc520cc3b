// Runs NVIDIA's ptxas to turn PTX into a cubin.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tilec::driver {

/// Where ptxas is: $TILEC_PTXAS when it names an executable, else the first `ptxas` on $PATH,
/// else /usr/local/cuda/bin/ptxas; nullopt when none is executable.
std::optional<std::string> findPtxas();

struct PtxasResult {
  bool ok = false;
  std::string cubin; // the ELF image, when ok
  std::string log;   // ptxas's stdout and stderr (warnings also come with ok), or why it failed
};

/// Runs `ptxas -arch=<arch> -O3 [extraArgs...] in.ptx -o out.cubin` in a private temporary
/// directory (removed afterwards), without a shell.
PtxasResult runPtxas(const std::string &ptxas, std::string_view ptx, std::string_view arch,
                     const std::vector<std::string> &extraArgs = {});

} // namespace tilec::driver
