// The directory of an `axiom train` run (--out): which files a run writes, whether a new run may
// start there, the lock that keeps a second training out, and the cleanup of temporary files that
// a killed write left behind. axiom never deletes or overwrites a file it did not write.
//
//   run directory        checkpoint.json, model-NNNNNN.safetensors, optimizer-NNNNNN.safetensors,
//                        checkpoint.pending.json (models/training/training.h), metrics.jsonl, loss.png,
//                        events.out.tfevents.axiom (TensorBoard), profile.csv, profile.trace.json, best/ (the best
//                        held-out evaluation's checkpoint, with --patience) (train.cpp), and train.lock
//   temporary files      NAME.tmp-PID-N (core/formats/atomic_file.h) and loss.png.tmp-PID.png (the plot),
//                        for NAME one of the above: renamed over NAME when complete
#pragma once

#include <string>

namespace axiom::apps {

// Whether `name` (a file name, no directory) is one that a run writes, temporary files included.
bool written_by_runs(const std::string& name);

// Whether `dir` holds a run (a checkpoint.json).
bool has_checkpoint(const std::string& dir);

// A new run goes into a new or empty directory (what an attempt that never committed a checkpoint
// leaves does not count: the lock file, temporary files, an uncommitted checkpoint's files). `force` accepts a
// directory of other files, as long as none has a name a run writes. An Error otherwise, naming the directory and what
// is in the way.
void check_new_run_directory(const std::string& dir, bool force);

// The exclusive right to train in `dir`, held until destroyed (or the process ends, also by
// kill -9: the kernel releases it). Creates `dir` if needed, and the file `dir`/train.lock, which
// holds the holder's process id; a second holder gets an Error naming the directory and the
// process that holds it. Taking the lock removes the temporary files that a killed write of an
// earlier run left in `dir`, and the files of a checkpoint that never committed (no one else can
// be writing them).
class RunLock {
 public:
  explicit RunLock(const std::string& dir);
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace axiom::apps
