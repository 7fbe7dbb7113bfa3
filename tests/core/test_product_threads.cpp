// Matrix products and threads (core/cpu/onednn_gemm.cpp): which threads run them, and what a
// signal that interrupts one may do.
//
// - oneDNN's products run on axiom's threads alone: at set_num_threads(1), on the calling thread,
//   with no OpenMP team of oneDNN's beside it (a product keeps the OpenMP thread count of the thread
//   that compiled it, which was the machine's core count).
// - A signal handler that interrupts a product runs on the thread's own stack. oneDNN's float32
//   GEMM kernels for AVX2 and AVX-512 (up to oneDNN 3.11.1) point the stack pointer at a workspace
//   on the heap when k is large; a signal handled there wrote its frame over the heap: SIGTERM
//   during `axiom train` on an AVX2-only CPU ended in "corrupted size vs. prev_size"
//   (SignalsHeldBack). Here a second thread sends the computing thread a signal every few
//   microseconds while it multiplies; the handler notes whether its own frame lies inside the
//   thread's stack, and the products must stay right.
//
// Both ask oneDNN for the AVX2 kernels, those of AVX2-only CPUs: on a CPU with AVX-512, oneDNN picks
// other kernels for these shapes (ONEDNN_MAX_CPU_ISA, which oneDNN reads once, before its first
// kernel: ctest runs each test case in a process of its own).
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <thread>

#include "tests/support/reference.h"

namespace axiom::test {

using core::Tensor;

namespace {

// Asks oneDNN for its AVX2 kernels, where the CPU has AVX2 and the user has not chosen.
void ask_onednn_for_avx2_kernels() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) setenv("ONEDNN_MAX_CPU_ISA", "AVX2", /*overwrite=*/0);
}

int64_t threads_of_this_process() {
  const std::filesystem::directory_iterator tasks("/proc/self/task");
  return std::distance(begin(tasks), end(tasks));
}

// The operands of products with the shapes of a feed-forward layer's: x [128, 256] @ w [256, 64]
// (k = 256 is past the 252 that the AVX2 kernel keeps on the stack: its heap workspace), and
// g^T [64, 512] @ h [512, 128], as in its weights' gradient (a transposed operand: blocks of k
// short enough for the stack); and OpenBLAS's: p [100, 200] @ q [200, 100] in float64, and
// u [60, 60] @ v [60, 60], too small for oneDNN.
struct Operands {
  Generator gen{45};
  Tensor x = random_tensor({128, 256}, Dtype::float32, gen), w = random_tensor({256, 64}, Dtype::float32, gen);
  Tensor g = random_tensor({512, 64}, Dtype::float32, gen), h = random_tensor({512, 128}, Dtype::float32, gen);
  Tensor p = random_tensor({100, 200}, Dtype::float64, gen), q = random_tensor({200, 100}, Dtype::float64, gen);
  Tensor u = random_tensor({60, 60}, Dtype::float32, gen), v = random_tensor({60, 60}, Dtype::float32, gen);

  std::vector<Tensor> products() const {
    return {core::matmul(x, w), core::matmul(g.transpose(0, 1), h), core::matmul(p, q), core::matmul(u, v)};
  }
};

// The process's thread count for one test, as it was again after it.
struct ThreadCountForTest {
  explicit ThreadCountForTest(int count) : before(core::num_threads()) { core::set_num_threads(count); }
  ~ThreadCountForTest() { core::set_num_threads(before); }
  int before;
};

// The stack of the thread that multiplies: [lowest, highest).
const char* stack_lowest = nullptr;
const char* stack_highest = nullptr;
std::atomic<int> signals_handled{0};
std::atomic<int> handled_off_the_stack{0};

extern "C" void note_where_handled(int) {
  const char* frame = static_cast<const char*>(__builtin_frame_address(0));
  if (frame < stack_lowest || frame >= stack_highest) handled_off_the_stack.fetch_add(1);
  signals_handled.fetch_add(1);
}

// Sets stack_lowest and stack_highest to the calling thread's stack.
void note_this_threads_stack() {
  pthread_attr_t attributes;
  REQUIRE(pthread_getattr_np(pthread_self(), &attributes) == 0);
  void* lowest = nullptr;
  size_t size = 0;
  REQUIRE(pthread_attr_getstack(&attributes, &lowest, &size) == 0);
  pthread_attr_destroy(&attributes);
  stack_lowest = static_cast<const char*>(lowest);
  stack_highest = stack_lowest + size;
}

// SIGUSR2 to one thread every 20 microseconds or so, for as long as this lives, handled by
// note_where_handled; SIGUSR2's handling as it was afterwards.
class SignalStorm {
 public:
  explicit SignalStorm(pthread_t target) {
    struct sigaction action {};
    action.sa_handler = note_where_handled;
    sigemptyset(&action.sa_mask);
    sigaction(SIGUSR2, &action, &previous_);
    sender_ = std::thread([this, target] {
      while (!done_) {
        pthread_kill(target, SIGUSR2);
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
    });
  }
  ~SignalStorm() {
    done_ = true;
    sender_.join();
    std::signal(SIGUSR2, SIG_IGN);  // (drops a signal still pending)
    sigaction(SIGUSR2, &previous_, nullptr);
  }
  SignalStorm(const SignalStorm&) = delete;
  SignalStorm& operator=(const SignalStorm&) = delete;

 private:
  struct sigaction previous_ {};
  std::atomic<bool> done_{false};
  std::thread sender_;
};

// True when x and y hold the same values, bit for bit.
bool identical(const Tensor& x, const Tensor& y) { return values_of(x) == values_of(y); }

}  // namespace

TEST_CASE("matmul: oneDNN's products run on axiom's threads, with no OpenMP threads beside them") {
  ask_onednn_for_avx2_kernels();
  const Operands operands;
  // first a product that adds onto its output (linear's bias): oneDNN runs the addition as a
  // parallel loop over as many OpenMP threads as the product was compiled for
  Generator gen(46);
  const Tensor tall = random_tensor({4096, 64}, Dtype::float32, gen), bias = core::ones({256});
  auto all_products = [&] {
    (void)core::linear(tall, operands.w.transpose(0, 1), bias);
    (void)operands.products();
  };
  {
    const ThreadCountForTest one(1);
    const int64_t threads = threads_of_this_process();
    all_products();
    CHECK(threads_of_this_process() <= threads);
  }
  const ThreadCountForTest two(2);
  const int64_t threads = threads_of_this_process();
  all_products();
  CHECK(threads_of_this_process() <= threads + 1);  // oneTBB's second thread, at most
}

TEST_CASE("matmul: a signal that interrupts a product is handled on the thread's own stack") {
  ask_onednn_for_avx2_kernels();
  const ThreadCountForTest one(1);  // every band of every product on this thread
  note_this_threads_stack();
  const Operands operands;
  const std::vector<Tensor> first = operands.products();
  int products = 0, changed = 0;
  {
    const SignalStorm storm(pthread_self());
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(600);
    while (std::chrono::steady_clock::now() < end) {
      const std::vector<Tensor> again = operands.products();
      for (size_t i = 0; i < again.size(); ++i) changed += !identical(again[i], first[i]);
      products += static_cast<int>(again.size());
    }
  }
  MESSAGE(products << " products, " << signals_handled.load() << " signals handled");
  CHECK(signals_handled.load() > 100);  // the storm reached the thread
  CHECK(handled_off_the_stack.load() == 0);
  CHECK(changed == 0);
  const Operands& o = operands;
  check_close(first[0], product_reference(o.x, o.w, unchanged), {1e-4, 1e-5 * 256}, "x @ w");
  check_close(first[1], product_reference(o.g.transpose(0, 1), o.h, unchanged), {1e-4, 1e-5 * 512}, "g^T @ h");
  check_close(first[2], product_reference(o.p, o.q, unchanged), {1e-12, 1e-13 * 200}, "p @ q in float64");
  check_close(first[3], product_reference(o.u, o.v, unchanged), {1e-4, 1e-5 * 60}, "u @ v, small");
}

}  // namespace axiom::test
