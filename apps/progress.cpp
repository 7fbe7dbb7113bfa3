#include "apps/progress.h"

#include <unistd.h>  // isatty

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace axiom::apps {

std::string format_duration(double seconds) {
  char text[32];
  if (seconds < 60) {
    std::snprintf(text, sizeof text, "%.1fs", seconds);
  } else if (seconds < 3600) {
    const long s = std::lround(seconds);
    std::snprintf(text, sizeof text, "%ldm%02lds", s / 60, s % 60);
  } else {
    const long m = std::lround(seconds / 60);
    std::snprintf(text, sizeof text, "%ldh%02ldm", m / 60, m % 60);
  }
  return text;
}

std::string progress_bar(int64_t done, int64_t total, int width) {
  const double fraction = total > 0 ? std::min(1.0, static_cast<double>(done) / static_cast<double>(total)) : 1.0;
  const int filled = static_cast<int>(fraction * width);
  std::string bar(width + 2, '.');
  bar.front() = '[', bar.back() = ']';
  std::fill_n(bar.begin() + 1, filled, '#');
  return bar;
}

StatusLine::StatusLine(bool visible) : visible_(visible), terminal_(::isatty(STDERR_FILENO) == 1) {}

void StatusLine::show(const std::string& text, bool keep) {
  if (!visible_) return;
  if (terminal_) {
    std::fprintf(stderr, "\r\033[K%s", text.c_str());  // back to the start, clear, write
    open_ = true;
    if (keep) finish();
  } else if (keep) {
    std::fprintf(stderr, "%s\n", text.c_str());
  }
  std::fflush(stderr);
}

void StatusLine::finish() {
  if (open_) std::fputc('\n', stderr);
  open_ = false;
}

}  // namespace axiom::apps
