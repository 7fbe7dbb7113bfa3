// The profiler: where the time of a step goes, op by op, forward and backward.
//
//   axiom::Profiler profiler;                   // records on every thread while it runs
//   {
//     const axiom::ProfileRange phase("forward");  // a phase of your own, a box in the trace
//     loss = model.loss(batch);
//   }
//   loss.backward();
//   const axiom::Profile profile = profiler.stop();
//   std::cout << profile.table();                // one row per op and pass, the slowest first
//   std::ofstream("trace.json") << profile.chrome_trace();   // chrome://tracing, ui.perfetto.dev
//
// What is timed, on the thread that runs it:
//   - a forward op (every op of ops.h, fused ones and custom ops by their names): from the end of
//     the event before it on its thread (the op before, or the start of the ProfileRange or rule
//     it is in) to the moment it records, so its checks, its output's allocation and its kernels.
//     A program's own work between two ops counts toward the second: put a ProfileRange around it
//     to see it apart. Its bytes (inputs and output; 0 for a view) and, for the matrix products
//     (matmul, linear, layer_norm_linear, activation_linear, layer_norm_feedforward), its FLOPs.
//   - a backward rule ("matmul", pass backward): the whole rule, the ops it calls inside it.
//   - a ProfileRange: its own time is what no op inside it took (an optimizer's update, say).
// Events nest (an op inside a rule inside a range), as the Chrome trace shows them; the table's
// rows are the outermost ops and rules, and each range's own time, so they add up to the time
// profiled. Off, each op pays one atomic load.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace axiom {

struct ProfileEvent {
  std::string name;  // "matmul", a custom op's name, a range's name
  std::string kind;  // "op", "rule" (a backward rule) or "range"
  // "forward", "backward" (a rule), "in backward" (an op the engine runs itself during a backward
  // pass: the sums that undo broadcasting, the additions of gradients), "" (a range)
  std::string pass;
  int64_t start_ns = 0, end_ns = 0;  // since the profiler started
  int64_t self_ns = 0;               // end - start, less the events directly inside it
  int thread = 0;                    // 0 for the first thread that recorded, then 1, 2, ...
  bool outermost = true;             // no op or rule encloses it: a row of the table
  int64_t bytes = -1, flops = -1;    // -1: not known
};

// One row of the table: the events of one name, kind and pass.
struct ProfileRow {
  std::string name, kind, pass;
  int64_t calls = 0;
  double seconds = 0;              // summed (a range: its own time only)
  int64_t bytes = -1, flops = -1;  // summed; -1 where not known
};

class Profile {
 public:
  Profile(std::vector<ProfileEvent> events, double wall_seconds);

  const std::vector<ProfileEvent>& events() const { return events_; }
  double wall_seconds() const { return wall_seconds_; }  // from start to stop
  std::vector<ProfileRow> rows() const;                  // the slowest first
  // Columns: op, pass, calls, total ms, share of the wall time, mean us, GB/s, GFLOP/s.
  std::string table(size_t max_rows = 25) const;
  std::string csv() const;           // every row, the same columns, seconds and bytes in full
  std::string chrome_trace() const;  // Trace Event Format JSON: one complete ("X") event per event
  // How each of those begins, whatever the profile: a file that does not is not one of them.
  static constexpr std::string_view kCsvStart = "op,kind,pass,calls,seconds,share,bytes,flops\n";
  static constexpr std::string_view kTraceStart = "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [";

 private:
  std::vector<ProfileEvent> events_;
  double wall_seconds_;
};

// Records from its construction to stop() (or its destruction). One at a time in a process: a
// second is an Error naming the first's start.
class Profiler {
 public:
  Profiler();
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  Profile stop();  // an Error if stopped already

 private:
  std::chrono::steady_clock::time_point start_;
  bool stopped_ = false;
};

// A named part of a program (a phase: "forward", "optimizer"), one event while a Profiler runs.
class ProfileRange {
 public:
  explicit ProfileRange(std::string name);
  ~ProfileRange();
  ProfileRange(const ProfileRange&) = delete;
  ProfileRange& operator=(const ProfileRange&) = delete;

 private:
  std::unique_ptr<class ProfiledSpan> span_;  // internal.h
};

}  // namespace axiom
