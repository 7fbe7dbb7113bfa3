// Storage and allocation_stats: views share one buffer, and every buffer is freed when its last
// tensor goes, also when an op throws halfway.
#include <cstdint>
#include <utility>
#include <vector>

#include "core/backend.h"
#include "core/cpu/allocator.h"
#include "core/memory.h"

#include "tests/support/reference.h"

namespace core = axiom::core;
using namespace axiom::test;
using axiom::core::Tensor;

namespace {
int64_t live_buffers() { return core::allocation_stats().live_buffers; }
int64_t live_bytes() { return core::allocation_stats().live_bytes; }
}  // namespace

TEST_CASE("views allocate nothing, copies allocate one buffer each") {
  const int64_t start = live_buffers(), start_bytes = live_bytes();
  {
    const Tensor x = core::zeros({10, 10});
    CHECK(live_buffers() == start + 1);
    CHECK(live_bytes() == start_bytes + 400);
    CHECK(x.storage()->nbytes() == 400);
    CHECK(core::allocation_stats().peak_bytes >= live_bytes());
    const Tensor views[] = {
        x.reshape({100}),  x.transpose(0, 1), x.slice(0, 0, 10, 3), x.select(1, 2), x.unsqueeze(0).expand({4, 10, 10}),
        x.permute({1, 0}), x.view({4, 25})};
    for (const Tensor& v : views) CHECK(v.storage() == x.storage());
    CHECK(live_buffers() == start + 1);
    const Tensor copy = x.transpose(0, 1).contiguous();
    CHECK(live_buffers() == start + 2);
    const Tensor sum = core::add(x, copy);
    CHECK(live_buffers() == start + 3);
  }
  CHECK(live_buffers() == start);
  CHECK(live_bytes() == start_bytes);
}

TEST_CASE("a view keeps its storage alive after the base handle is gone") {
  const int64_t start = live_buffers();
  {
    Tensor view;
    {
      const Tensor base = core::arange(0, 12, 1, Dtype::float64).reshape({3, 4});
      view = base.slice(1, 1, 4, 2);  // columns 1 and 3
    }
    CHECK(live_buffers() >= start + 1);
    check_equal(view, {1, 3, 5, 7, 9, 11});
  }
  CHECK(live_buffers() == start);
}

TEST_CASE("every op leaves no buffer behind, even when it throws") {
  const int64_t start = live_buffers();
  {
    Generator gen(71);
    const Tensor x = random_tensor({4, 5}, Dtype::float32, gen, Layout::permuted);
    const Tensor index = core::from_vector<int64_t>({0, 2, 2});
    (void)core::softmax(x, 0);
    (void)core::layer_norm(x);
    (void)core::matmul(x, x.transpose(0, 1));
    (void)core::var(x, {0});
    (void)core::max_with_indices(x, 1);
    (void)core::index_add(x, 0, index, core::ones({3, 5}));
    (void)core::concat({x, x}, 1);
    (void)core::shift(x, 1, 2);
    (void)x.to_string();
    (void)x.reshape({20}).to(Dtype::int64);
    // Errors thrown after some buffers were made (the index check reads the index through a copy).
    CHECK_THROWS_AS((void)core::index_select(x.transpose(0, 1), 0, core::from_vector<int64_t>({9})), axiom::Error);
    CHECK_THROWS_AS((void)core::matmul(x, x), axiom::Error);
    CHECK_THROWS_AS((void)core::add(x, core::zeros({3})), axiom::Error);
    CHECK_THROWS_AS((void)x.view({20}), axiom::Error);
  }
  CHECK(live_buffers() == start);
}

TEST_CASE("large buffers are counted as freed, whatever the allocator keeps") {
  const int64_t start = live_buffers(), start_bytes = live_bytes();
  for (int i = 0; i < 3; ++i) {
    const Tensor big = core::full({1 << 16}, i, Dtype::float64);  // 512 KiB: reused by the allocator
    CHECK(live_bytes() == start_bytes + (int64_t{1} << 19));
    CHECK(big.at({12345}) == i);
  }
  CHECK(live_buffers() == start);
  CHECK(live_bytes() == start_bytes);
}

TEST_CASE(
    "a buffer the machine cannot give is an Error with the size and the machine's memory, and freeing never throws") {
  // Freeing runs in destructors, also while an out-of-memory Error unwinds: it must not throw.
  static_assert(noexcept(std::declval<core::Backend&>().deallocate(nullptr, 0)));
  const int64_t start = live_buffers(), start_bytes = live_bytes();
  const int64_t too_many = int64_t{1} << 52;  // 16 PiB of float32
  CHECK_THROWS_WITH_AS(
      (void)core::empty({too_many}),
      doctest::Contains("[allocate] out of memory: asked for 16.0 PiB (18014398509481984 bytes); this machine has"),
      axiom::Error);
  CHECK(live_buffers() == start);
  CHECK(live_bytes() == start_bytes);
  CHECK_NOTHROW((void)core::zeros({1 << 16}));  // and the allocator still works
}

TEST_CASE("the host allocator hands a freed buffer, small or large, out again for the same size") {
  core::cpu::HostAllocator& allocator = core::cpu::host_allocator();
  if (!core::cpu::HostAllocator::keeps_freed_blocks()) return;  // AddressSanitizer: every buffer is freed
  for (const size_t nbytes : {size_t{4}, size_t{200}, size_t{4096}, size_t{1} << 20}) {
    CAPTURE(nbytes);
    void* first = allocator.allocate(nbytes);
    CHECK(reinterpret_cast<uintptr_t>(first) % 64 == 0);
    const size_t kept = allocator.cached_bytes();
    allocator.deallocate(first, nbytes);
    CHECK(allocator.cached_bytes() == kept + (nbytes + 63) / 64 * 64);  // kept, by its size rounded to 64 bytes
    void* again = allocator.allocate(nbytes);
    CHECK(again == first);
    CHECK(allocator.cached_bytes() == kept);
    allocator.deallocate(again, nbytes);
  }
  allocator.release_cached();
  CHECK(allocator.cached_bytes() == 0);
}

TEST_CASE("machine_memory and format_bytes") {
  const core::MachineMemory memory = core::machine_memory();
  CHECK(memory.total > (size_t{64} << 20));
  CHECK(memory.available > 0);
  CHECK(memory.available <= memory.total + core::cpu::host_allocator().cached_bytes());
  CHECK(core::format_bytes(512) == "512 bytes");
  CHECK(core::format_bytes(1536) == "1.5 KiB");
  CHECK(core::format_bytes(3.0 * (size_t{1} << 30)) == "3.0 GiB");
}

TEST_CASE("a shape whose strides or bytes overflow int64 is an Error, also when another size is 0") {
  const int64_t big = int64_t{1} << 40;
  CHECK_THROWS_WITH_AS(
      (void)core::empty({0, big, big}),
      doctest::Contains(
          "[empty] shape [0, 1099511627776, 1099511627776] of float32 has more bytes than a 64-bit size can count"),
      axiom::Error);
  CHECK_THROWS_WITH_AS((void)core::empty({int64_t{1} << 61}, Dtype::float64),
                       doctest::Contains("has more bytes than a 64-bit size can count"), axiom::Error);
  CHECK(core::empty({0, 1 << 20, 1 << 20}).numel() == 0);  // large but countable: fine
}
