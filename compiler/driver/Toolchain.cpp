#include "driver/Toolchain.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace tilec::driver {

namespace fs = std::filesystem;

namespace {

bool isExecutable(const std::string &path) {
  std::error_code ec;
  return !path.empty() && fs::is_regular_file(path, ec) && ::access(path.c_str(), X_OK) == 0;
}

std::optional<std::string> readFile(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  if (!in)
    return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// A mkdtemp directory that removes itself.
class TempDir {
public:
  TempDir() {
    const char *base = std::getenv("TMPDIR");
    std::string pattern = fmt::format("{}/tilec-tool-XXXXXX", base && *base ? base : "/tmp");
    if (::mkdtemp(pattern.data()))
      path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty())
      fs::remove_all(path_, ec);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  const fs::path &path() const { return path_; }

private:
  fs::path path_;
};

/// $`envVar` when it names an executable, else the first of `candidates` that is: an absolute
/// path as it is, a bare name searched on $PATH.
std::optional<std::string> findExecutable(const char *envVar,
                                          std::initializer_list<std::string_view> candidates) {
  if (const char *env = std::getenv(envVar); env && isExecutable(env))
    return std::string(env);
  const char *path = std::getenv("PATH");
  for (std::string_view c : candidates) {
    if (c.starts_with('/')) {
      if (isExecutable(std::string(c)))
        return std::string(c);
      continue;
    }
    for (std::string_view rest = path ? path : ""; !rest.empty();) {
      size_t colon = rest.find(':');
      std::string_view dir = rest.substr(0, colon);
      rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
      if (dir.empty())
        continue;
      std::string candidate = fmt::format("{}/{}", dir, c);
      if (isExecutable(candidate))
        return candidate;
    }
  }
  return std::nullopt;
}

/// Runs `program` with the arguments `args(in, out)` names, where `in` holds `input` and `out`
/// is where the tool writes its result, in a private temporary directory, without a shell.
template <class Args>
ToolResult runTool(const std::string &program, std::string_view input, std::string_view inName,
                   std::string_view outName, Args &&makeArgs) {
  ToolResult result;
  TempDir dir;
  if (dir.path().empty()) {
    result.log = fmt::format("cannot create a temporary directory: {}", std::strerror(errno));
    return result;
  }
  fs::path in = dir.path() / inName, out = dir.path() / outName, log = dir.path() / "log";
  {
    std::ofstream f(in, std::ios::binary);
    f.write(input.data(), static_cast<std::streamsize>(input.size()));
    if (!f) {
      result.log = fmt::format("cannot write {}", in.string());
      return result;
    }
  }

  std::vector<std::string> args = makeArgs(in.string(), out.string());
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = 0;
  int err = ::posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) {
    result.log = fmt::format("cannot run {}: {}", program, std::strerror(err));
    return result;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      result.log = fmt::format("waiting for {}: {}", program, std::strerror(errno));
      return result;
    }
  }
  // The temporary path would make messages differ from run to run.
  result.log = readFile(log).value_or("");
  const std::pair<std::string, std::string> shown[] = {
      {in.string(), fmt::format("input{}", fs::path(inName).extension().string())},
      {out.string(), std::string(outName)}};
  for (const auto &[tmp, name] : shown)
    for (size_t pos; (pos = result.log.find(tmp)) != std::string::npos;)
      result.log.replace(pos, tmp.size(), name);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    if (result.log.empty())
      result.log = WIFEXITED(status)
                       ? fmt::format("{} exited with status {}", program, WEXITSTATUS(status))
                       : fmt::format("{} was killed by signal {}", program, WTERMSIG(status));
    return result;
  }
  std::optional<std::string> written = readFile(out);
  if (!written || written->empty()) {
    result.log += fmt::format("{} wrote no {}", program, outName);
    return result;
  }
  result.output = std::move(*written);
  result.ok = true;
  return result;
}

} // namespace

std::optional<std::string> findPtxas() {
  return findExecutable("TILEC_PTXAS", {"ptxas", "/usr/local/cuda/bin/ptxas"});
}

ToolResult runPtxas(const std::string &ptxas, std::string_view ptx, std::string_view arch,
                    const std::vector<std::string> &extraArgs) {
  return runTool(ptxas, ptx, "in.ptx", "out.cubin", [&](std::string in, std::string out) {
    std::vector<std::string> args = {ptxas, fmt::format("-arch={}", arch), "-O3"};
    args.insert(args.end(), extraArgs.begin(), extraArgs.end());
    args.insert(args.end(), {std::move(in), "-o", std::move(out)});
    return args;
  });
}

std::optional<std::string> findLld() {
  // LLVM 22's: an older ld.lld may not know the code object version LLVM 22 writes.
  return findExecutable("TILEC_LLD", {"ld.lld-22", "/usr/lib/llvm-22/bin/ld.lld", "ld.lld"});
}

ToolResult runLld(const std::string &lld, std::string_view object) {
  return runTool(lld, object, "in.o", "out.hsaco", [&](std::string in, std::string out) {
    return std::vector<std::string>{lld,           "-shared", "--no-undefined",
                                    std::move(in), "-o",      std::move(out)};
  });
}

} // namespace tilec::driver
