// A one-line progress report on stderr while `tilec bench` or `tilec tune` works on the GPU, only
// when stderr is a terminal: the line is rewritten in place and cleared at the end.
#pragma once

#include <mutex>
#include <ostream>
#include <string>

#include <unistd.h>

namespace tilec::driver {

class Progress {
public:
  explicit Progress(std::ostream &err) : err_(err), on_(::isatty(STDERR_FILENO) != 0) {}
  ~Progress() { show(""); }
  Progress(const Progress &) = delete;
  Progress &operator=(const Progress &) = delete;
  /// Replaces the line with `text` (empty: clears it). Thread-safe.
  void show(const std::string &text) {
    if (!on_)
      return;
    std::lock_guard<std::mutex> lock(mutex_);
    err_ << "\r\033[K" << text << std::flush;
  }

private:
  std::ostream &err_;
  bool on_;
  std::mutex mutex_;
};

} // namespace tilec::driver
