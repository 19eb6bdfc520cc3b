#include "driver/Ptxas.h"

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
    std::string pattern = fmt::format("{}/tilec-ptxas-XXXXXX", base && *base ? base : "/tmp");
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

} // namespace

std::optional<std::string> findPtxas() {
  if (const char *env = std::getenv("TILEC_PTXAS"); env && isExecutable(env))
    return std::string(env);
  if (const char *path = std::getenv("PATH")) {
    std::string_view rest = path;
    while (!rest.empty()) {
      size_t colon = rest.find(':');
      std::string_view dir = rest.substr(0, colon);
      rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
      if (dir.empty())
        continue;
      std::string candidate = fmt::format("{}/ptxas", dir);
      if (isExecutable(candidate))
        return candidate;
    }
  }
  if (isExecutable("/usr/local/cuda/bin/ptxas"))
    return std::string("/usr/local/cuda/bin/ptxas");
  return std::nullopt;
}

PtxasResult runPtxas(const std::string &ptxas, std::string_view ptx, std::string_view arch,
                     const std::vector<std::string> &extraArgs) {
  PtxasResult result;
  TempDir dir;
  if (dir.path().empty()) {
    result.log = fmt::format("cannot create a temporary directory: {}", std::strerror(errno));
    return result;
  }
  fs::path in = dir.path() / "in.ptx", out = dir.path() / "out.cubin", log = dir.path() / "log";
  {
    std::ofstream f(in, std::ios::binary);
    f.write(ptx.data(), static_cast<std::streamsize>(ptx.size()));
    if (!f) {
      result.log = fmt::format("cannot write {}", in.string());
      return result;
    }
  }

  std::vector<std::string> args = {ptxas, fmt::format("-arch={}", arch), "-O3"};
  args.insert(args.end(), extraArgs.begin(), extraArgs.end());
  args.insert(args.end(), {in.string(), "-o", out.string()});
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
  int err = ::posix_spawn(&pid, ptxas.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) {
    result.log = fmt::format("cannot run {}: {}", ptxas, std::strerror(err));
    return result;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      result.log = fmt::format("waiting for {}: {}", ptxas, std::strerror(errno));
      return result;
    }
  }
  // The temporary path would make messages differ from run to run.
  result.log = readFile(log).value_or("");
  for (size_t pos; (pos = result.log.find(in.string())) != std::string::npos;)
    result.log.replace(pos, in.string().size(), "input.ptx");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    if (result.log.empty())
      result.log = WIFEXITED(status)
                       ? fmt::format("{} exited with status {}", ptxas, WEXITSTATUS(status))
                       : fmt::format("{} was killed by signal {}", ptxas, WTERMSIG(status));
    return result;
  }
  std::optional<std::string> cubin = readFile(out);
  if (!cubin || cubin->empty()) {
    result.log += fmt::format("{} wrote no cubin", ptxas);
    return result;
  }
  result.cubin = std::move(*cubin);
  result.ok = true;
  return result;
}

} // namespace tilec::driver
