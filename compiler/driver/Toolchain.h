// The vendor tools that finish machine code, run as child processes: NVIDIA's ptxas (PTX ->
// cubin) and LLVM's ld.lld (an AMDGPU object -> a code object).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tilec::driver {

struct ToolResult {
  bool ok = false;
  std::string output; // the file the tool wrote (an ELF image), when ok
  std::string log;    // the tool's stdout and stderr (warnings also come with ok), or why it failed
};

/// Where ptxas is: $TILEC_PTXAS when it names an executable, else the first `ptxas` on $PATH,
/// else /usr/local/cuda/bin/ptxas; nullopt when none is executable.
std::optional<std::string> findPtxas();

/// Runs `ptxas -arch=<arch> -O3 [extraArgs...] in.ptx -o out.cubin` in a private temporary
/// directory (removed afterwards), without a shell.
ToolResult runPtxas(const std::string &ptxas, std::string_view ptx, std::string_view arch,
                    const std::vector<std::string> &extraArgs = {});

/// Where ld.lld is: $TILEC_LLD when it names an executable, else `ld.lld-22` on $PATH, else
/// /usr/lib/llvm-22/bin/ld.lld, else `ld.lld` on $PATH; nullopt when none is executable.
std::optional<std::string> findLld();

/// Runs `ld.lld -shared --no-undefined in.o -o out.hsaco`: an AMDGPU relocatable object becomes
/// the code object that hipModuleLoadData takes.
ToolResult runLld(const std::string &lld, std::string_view object);

} // namespace tilec::driver
