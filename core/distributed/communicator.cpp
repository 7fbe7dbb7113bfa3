// The communicator's public calls, the single-process communicator and the choice of world()
// (communicator.h). The MPI transport is in mpi_communicator.cpp.
#include "core/distributed/communicator.h"

#include <cstdlib>
#include <mutex>
#include <sstream>

#include "core/error.h"
#include "core/factory.h"
#include "core/launch.h"
#include "core/storage.h"

namespace axiom::core {

#ifdef AXIOM_WITH_MPI
std::unique_ptr<Communicator> start_mpi();  // mpi_communicator.cpp
#endif

namespace {

void check_reducible(const char* op, const Tensor& tensor) {
  if (!tensor.defined()) throw Error(op, "the tensor is undefined");
  const Dtype d = tensor.dtype();
  if (d != Dtype::float32 && d != Dtype::float64 && d != Dtype::int64) {
    throw Error(op, "reduces float32, float64 or int64 tensors, not ", d);
  }
}

// The values of `tensor` in contiguous host memory: the tensor itself when it already is that,
// else a copy.
Tensor host_contiguous(const Tensor& tensor) {
  return tensor.device() == Device::cpu() ? tensor.contiguous() : tensor.to(Device::cpu()).contiguous();
}

// Writes what the transport left in `host` back into `tensor` (a no-op copy when they are one).
void write_back(const Tensor& host, const Tensor& tensor) {
  if (host.storage() == tensor.storage()) {
    tensor.storage()->mark_written();  // autograd must know these values changed
  } else {
    copy_into(host.to(tensor.device()), tensor);
  }
}

class SingleProcess final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_size() const override { return 1; }
  std::string name() const override { return "single process"; }
  void barrier() override {}
  // No other process to end: the caller's own error handling ends this one (the library never exits).
  [[noreturn]] void abort(int code) override { throw Error("abort", "the job was aborted with code ", code); }

 protected:
  // With one rank, the sum, min and max over ranks are the values themselves.
  void allreduce_buffer(void*, int64_t, Dtype, AllreduceOp) override {}
  std::unique_ptr<PendingCollective> start_allreduce_buffer(void*, int64_t, Dtype, AllreduceOp) override {
    struct Done final : PendingCollective {
      bool test() override { return true; }
      void wait() override {}
    };
    return std::make_unique<Done>();
  }
  void broadcast_buffer(void*, int64_t, int) override {}
};

int positive_env(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr) return 0;
  const long value = std::strtol(text, nullptr, 10);
  return value > 0 && value < (1 << 24) ? static_cast<int>(value) : 0;
}

std::unique_ptr<Communicator> start_world() {
  const int launched = launched_processes();
#ifdef AXIOM_WITH_MPI
  if (positive_env("OMPI_COMM_WORLD_SIZE") > 0 || positive_env("PMI_SIZE") > 0) return start_mpi();
#endif
  if (launched > 1) {
    throw Error("mpi", "this axiom was built without MPI, but its launcher started ", launched,
                " processes, each of which would train alone. Install Open MPI (libopenmpi-dev openmpi-bin; "
                "apps/install-deps.sh does it) and build again, or run a single process");
  }
  return nullptr;  // single_process()
}

struct World {
  std::once_flag once;
  std::unique_ptr<Communicator> mpi;
  bool started = false;
};

World& the_world() {
  static World world;
  return world;
}

uint64_t fingerprint(const std::string& text) {  // FNV-1a, 64 bits
  uint64_t hash = 0xcbf29ce484222325ull;
  for (const unsigned char c : text) hash = (hash ^ c) * 0x100000001b3ull;
  return hash;
}

}  // namespace

void Communicator::allreduce(const Tensor& tensor, AllreduceOp op) {
  check_reducible("allreduce", tensor);
  if (size() == 1 || tensor.numel() == 0) return;
  const Tensor host = host_contiguous(tensor);
  allreduce_buffer(host.raw_data(), host.numel(), host.dtype(), op);
  write_back(host, tensor);
}

std::unique_ptr<PendingCollective> Communicator::start_allreduce(const Tensor& contiguous_cpu, AllreduceOp op) {
  check_reducible("start_allreduce", contiguous_cpu);
  if (!contiguous_cpu.is_contiguous() || contiguous_cpu.device() != Device::cpu()) {
    throw Error("start_allreduce", "needs a contiguous CPU tensor (it is written while the call is under way), got ",
                contiguous_cpu.shape(), " with strides ", contiguous_cpu.strides(), " on ", contiguous_cpu.device());
  }
  contiguous_cpu.storage()->mark_written();
  return start_allreduce_buffer(contiguous_cpu.raw_data(), contiguous_cpu.numel(), contiguous_cpu.dtype(), op);
}

void Communicator::broadcast(const Tensor& tensor, int root) {
  if (!tensor.defined()) throw Error("broadcast", "the tensor is undefined");
  if (root < 0 || root >= size())
    throw Error("broadcast", "root ", root, " is not a rank of this job (0 to ", size() - 1, ")");
  if (size() == 1 || tensor.numel() == 0) return;
  const Tensor host = host_contiguous(tensor);
  broadcast_buffer(host.raw_data(), host.numel() * static_cast<int64_t>(dtype_size(host.dtype())), root);
  write_back(host, tensor);
}

Communicator& single_process() {
  static SingleProcess single;
  return single;
}

Communicator& world() {
  World& w = the_world();
  std::call_once(w.once, [&w] {
    w.mpi = start_world();
    w.started = true;
  });
  return w.mpi ? *w.mpi : single_process();
}

bool world_started() { return the_world().started; }

bool built_with_mpi() {
#ifdef AXIOM_WITH_MPI
  return true;
#else
  return false;
#endif
}

int launched_processes() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    if (const int n = positive_env(name)) return n;
  }
  return 1;
}

void check_same_on_every_rank(Communicator& comm, const std::string& text, const char* op, const char* what) {
  if (comm.size() == 1) return;
  const auto mine = static_cast<int64_t>(fingerprint(text));
  const Tensor roots = from_vector<int64_t>({mine});
  comm.broadcast(roots, 0);
  const Tensor differs = zeros({comm.size()}, Dtype::int64);  // [size]: 1 where a rank's text differs
  differs.set({comm.rank()}, roots.to_vector<int64_t>()[0] == mine ? 0 : 1);
  comm.allreduce(differs);
  std::ostringstream ranks;
  int count = 0;
  const std::vector<int64_t> flags = differs.to_vector<int64_t>();
  for (int r = 0; r < comm.size(); ++r) {
    if (flags[r] != 0) ranks << (count++ ? ", " : "") << r;
  }
  if (count > 0) {
    throw Error(op, "the ", comm.size(), " processes were started with different ", what, ": rank",
                count > 1 ? "s " : " ", ranks.str(), " differ", count > 1 ? "" : "s",
                " from rank 0. Every rank must run the same command");
  }
}

}  // namespace axiom::core
