// The profiler (profiler.h): each thread keeps its open spans (ranges, backward rules, custom ops)
// and the moment of its last event; finished events go into one list under a lock. The engine and
// custom ops call the hooks of internal.h.
#include "autograd/profiler.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

#include "autograd/internal.h"
#include "core/error.h"

namespace axiom {

namespace {

using Clock = std::chrono::steady_clock;

// The running profiler's shared state. `generation` tells a thread that its own state belongs to
// an earlier profiler.
std::atomic<bool> running{false};
std::mutex events_mutex;
std::vector<ProfileEvent> events;
Clock::time_point started;
std::atomic<uint64_t> generation{0};  // written under events_mutex before `running` is set
std::atomic<int> next_thread{0};

struct OpenSpan {
  std::string name;
  const char* kind;
  const char* pass;
  int64_t start_ns;
  int64_t children_ns = 0;  // the events directly inside it
};

struct ThreadState {
  uint64_t generation = 0;
  int thread = 0;
  int64_t last_event_ns = 0;  // where the next op's time starts
  std::vector<OpenSpan> open;
};
thread_local ThreadState state;
thread_local int in_backward_walk = 0;  // the engine's walk is running on this thread

int64_t now_ns() { return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - started).count(); }

// This thread's state for the running profiler: a thread that records for the first time starts
// its clock now.
ThreadState& thread_state() {
  if (state.generation != generation) {
    const std::lock_guard lock(events_mutex);
    state = ThreadState{generation, next_thread++, now_ns(), {}};
  }
  return state;
}

// A rule's pass is "backward"; an op's is "forward", or "in backward" for the ops the engine runs
// itself during a backward pass (the sums that undo broadcasting, the gradients' additions).
const char* pass_of(const char* kind) {
  if (in_backward_walk == 0) return "forward";
  return std::string_view(kind) == "rule" ? "backward" : "in backward";
}

bool inside_op_or_rule(const ThreadState& s) {
  return std::any_of(s.open.begin(), s.open.end(),
                     [](const OpenSpan& span) { return std::string_view(span.kind) != "range"; });
}

// An event that ended now, started at `start_ns`, with `children_ns` of it spent in events inside.
void finish(ThreadState& s, ProfileEvent event, int64_t children_ns) {
  event.end_ns = now_ns();
  event.self_ns = event.end_ns - event.start_ns - children_ns;
  event.thread = s.thread;
  event.outermost = !inside_op_or_rule(s);
  if (!s.open.empty()) s.open.back().children_ns += event.end_ns - event.start_ns;
  s.last_event_ns = event.end_ns;
  const std::lock_guard lock(events_mutex);
  events.push_back(std::move(event));
}

// Inputs and output, in bytes; 0 for a view (the output shares an input's storage).
int64_t bytes_of(const std::vector<Tensor>& inputs, const core::Tensor& output) {
  int64_t bytes = static_cast<int64_t>(output.numel() * dtype_size(output.dtype()));
  for (const Tensor& input : inputs) {
    if (!input.defined()) continue;
    const core::Tensor& x = core_tensor(input);
    if (x.storage() == output.storage()) return 0;
    bytes += static_cast<int64_t>(x.numel() * dtype_size(x.dtype()));
  }
  return bytes;
}

// 2 M N K for the matrix products: the output's elements times twice the inner size K (the last
// size of the first input in each of them); layer_norm_feedforward's two products, 2 rows (D D' +
// D' N) for x [rows, D], up_weight [D, D'], down_weight [D', N]; -1 (not known) for the other ops.
int64_t flops_of(std::string_view name, const std::vector<Tensor>& inputs, const core::Tensor& output) {
  if (name == "layer_norm_feedforward") {
    if (inputs.size() != 7 || inputs[0].dim() == 0 || inputs[3].dim() != 2 || inputs[5].dim() != 2) return -1;
    const int64_t rows = output.dim() == 0 || output.size(-1) == 0 ? 0 : output.numel() / output.size(-1);
    return 2 * rows * (inputs[0].size(-1) * inputs[3].size(1) + inputs[5].size(0) * inputs[5].size(1));
  }
  static constexpr std::string_view products[] = {"matmul", "linear", "layer_norm_linear", "activation_linear"};
  if (std::find(std::begin(products), std::end(products), name) == std::end(products)) return -1;
  if (inputs.empty() || !inputs[0].defined() || inputs[0].dim() == 0) return -1;
  return 2 * output.numel() * inputs[0].size(-1);
}

}  // namespace

// --- the hooks (internal.h) --------------------------------------------------------------------------

bool profiling() { return running.load(std::memory_order_acquire); }  // (a plain load on x86)

void profile_op(const char* name, const std::vector<Tensor>& inputs, const core::Tensor& output) {
  ThreadState& s = thread_state();
  finish(s,
         {.name = name,
          .kind = "op",
          .pass = pass_of("op"),
          .start_ns = s.last_event_ns,
          .bytes = bytes_of(inputs, output),
          .flops = flops_of(name, inputs, output)},
         0);
}

ProfiledSpan::ProfiledSpan(const char* name, const char* kind) : open_(profiling()) {
  if (!open_) return;
  ThreadState& s = thread_state();
  generation_ = s.generation;
  const int64_t now = now_ns();
  s.open.push_back({name, kind, pass_of(kind), now});
  s.last_event_ns = now;
}

ProfiledSpan::~ProfiledSpan() {
  if (!open_ || !profiling() || state.generation != generation_ || state.open.empty()) return;
  OpenSpan span = std::move(state.open.back());
  state.open.pop_back();
  const bool range = std::string_view(span.kind) == "range";
  finish(state,
         {.name = std::move(span.name), .kind = span.kind, .pass = range ? "" : span.pass, .start_ns = span.start_ns},
         span.children_ns);
}

InBackwardWalk::InBackwardWalk() { ++in_backward_walk; }
InBackwardWalk::~InBackwardWalk() { --in_backward_walk; }

// --- Profiler, ProfileRange ------------------------------------------------------------------------

Profiler::Profiler() {
  const std::lock_guard lock(events_mutex);
  if (running) throw Error("Profiler", "a profiler is running already; stop it before starting another");
  events.clear();
  started = Clock::now();
  start_ = started;
  ++generation;
  next_thread = 0;
  state = ThreadState{generation, next_thread++, 0, {}};  // this thread's clock starts with the profiler
  running = true;
}

Profiler::~Profiler() {
  if (!stopped_) running = false;
}

Profile Profiler::stop() {
  if (stopped_) throw Error("Profiler", "stop() was called already");
  stopped_ = true;
  running = false;
  const double wall = std::chrono::duration<double>(Clock::now() - start_).count();
  const std::lock_guard lock(events_mutex);
  return Profile(std::move(events), wall);
}

ProfileRange::ProfileRange(std::string name) : span_(std::make_unique<ProfiledSpan>(name.c_str(), "range")) {}
ProfileRange::~ProfileRange() = default;

// --- Profile ------------------------------------------------------------------------------------------

Profile::Profile(std::vector<ProfileEvent> events, double wall_seconds)
    : events_(std::move(events)), wall_seconds_(wall_seconds) {}

namespace {

void add_known(int64_t& sum, int64_t value) { sum = (sum < 0 || value < 0) ? -1 : sum + value; }

std::string rate(double amount, double seconds, double unit) {
  if (amount < 0 || seconds <= 0) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", amount / seconds / unit);
  return text;
}

// A JSON string: quotes, backslashes and control characters escaped.
std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace

std::vector<ProfileRow> Profile::rows() const {
  std::map<std::tuple<std::string, std::string, std::string>, ProfileRow> by_key;
  for (const ProfileEvent& event : events_) {
    if (!event.outermost) continue;  // inside an op or a rule: counted there
    ProfileRow& row = by_key[{event.name, event.kind, event.pass}];
    const bool first = row.calls == 0;
    row.name = event.name, row.kind = event.kind, row.pass = event.pass;
    row.calls++;
    row.seconds += 1e-9 * static_cast<double>(event.kind == "range" ? event.self_ns : event.end_ns - event.start_ns);
    if (first) {
      row.bytes = event.bytes, row.flops = event.flops;
    } else {
      add_known(row.bytes, event.bytes), add_known(row.flops, event.flops);
    }
  }
  std::vector<ProfileRow> rows;
  for (auto& [key, row] : by_key) rows.push_back(std::move(row));
  std::stable_sort(rows.begin(), rows.end(),
                   [](const ProfileRow& a, const ProfileRow& b) { return a.seconds > b.seconds; });
  return rows;
}

std::string Profile::table(size_t max_rows) const {
  const std::vector<ProfileRow> all = rows();
  std::ostringstream out;
  char line[256];
  std::snprintf(line, sizeof line, "%-28s %-11s %7s %10s %7s %10s %8s %8s\n", "op", "pass", "calls", "total ms",
                "share", "mean us", "GB/s", "GFLOP/s");
  out << line;
  double shown = 0, total = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    const ProfileRow& row = all[i];
    total += row.seconds;
    if (i >= max_rows) continue;
    shown += row.seconds;
    const std::string pass = row.kind == "range" ? "(range)" : row.pass;
    std::snprintf(line, sizeof line, "%-28.28s %-11s %7lld %10.3f %6.1f%% %10.1f %8s %8s\n", row.name.c_str(),
                  pass.c_str(), static_cast<long long>(row.calls), 1e3 * row.seconds, 100 * row.seconds / wall_seconds_,
                  1e6 * row.seconds / static_cast<double>(row.calls),
                  rate(static_cast<double>(row.bytes), row.seconds, 1e9).c_str(),
                  rate(static_cast<double>(row.flops), row.seconds, 1e9).c_str());
    out << line;
  }
  if (all.size() > max_rows) {
    std::snprintf(line, sizeof line, "%-28s %-11s %7s %10.3f %6.1f%%\n", "(the other rows)", "", "",
                  1e3 * (total - shown), 100 * (total - shown) / wall_seconds_);
    out << line;
  }
  std::snprintf(line, sizeof line, "rows: %.3f ms of %.3f ms profiled (%.1f%%)\n", 1e3 * total, 1e3 * wall_seconds_,
                100 * total / wall_seconds_);
  out << line;
  return out.str();
}

std::string Profile::csv() const {
  std::ostringstream out;
  out << kCsvStart;
  out.precision(9);
  for (const ProfileRow& row : rows()) {
    out << json_string(row.name) << ',' << row.kind << ',' << row.pass << ',' << row.calls << ',' << row.seconds << ','
        << row.seconds / wall_seconds_ << ',' << row.bytes << ',' << row.flops << '\n';
  }
  return out.str();
}

std::string Profile::chrome_trace() const {
  std::ostringstream out;
  out << kTraceStart;
  char times[96];
  for (size_t i = 0; i < events_.size(); ++i) {
    const ProfileEvent& e = events_[i];
    std::snprintf(times, sizeof times, "\"ts\": %.3f, \"dur\": %.3f", 1e-3 * static_cast<double>(e.start_ns),
                  1e-3 * static_cast<double>(e.end_ns - e.start_ns));
    out << (i ? ",\n" : "\n") << "  {\"name\": " << json_string(e.name) << ", \"cat\": \""
        << (e.kind == "range" ? e.kind : e.kind + " " + e.pass) << "\", \"ph\": \"X\", " << times
        << ", \"pid\": 0, \"tid\": " << e.thread << ", \"args\": {\"bytes\": " << e.bytes << ", \"flops\": " << e.flops
        << "}}";
  }
  out << "\n]}\n";
  return out.str();
}

}  // namespace axiom
