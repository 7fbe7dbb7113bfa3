// What the long-running commands print while they work: durations, a progress bar, and a status
// line that rewrites itself on a terminal and is printed every so often (whole lines) otherwise.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace axiom::apps {

// 12.3s, 4m05s, 2h07m
std::string format_duration(double seconds);

// [########............] for done out of total, `width` characters between the brackets.
std::string progress_bar(int64_t done, int64_t total, int width = 24);

// A status line on standard error. On a terminal each show() replaces the last; elsewhere (a log
// file, CI) only the lines shown with `keep` are printed, so a log is not flooded.
// A hidden line prints nothing: the other ranks of a data-parallel job leave the terminal to rank 0.
class StatusLine {
 public:
  explicit StatusLine(bool visible = true);
  void show(const std::string& text, bool keep);
  void finish();  // ends a line left open on a terminal

 private:
  bool visible_;
  bool terminal_;
  bool open_ = false;
};

// Seconds since construction.
class Stopwatch {
 public:
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace axiom::apps
