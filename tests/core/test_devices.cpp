// One harness for every op on every device (after ggml's test-backend-ops): each case runs its op
// functions on CPU inputs and on the same inputs moved to Device::cuda(), and the results must
// agree. The cases build their views (transposes, slices, broadcasts, offsets) on the device
// themselves, so the device kernels see the same layouts as the CPU ones, and they use the shapes
// that break kernels: empty, one element, 31, 257, rows longer than a block, and more elements
// than a capped grid covers (so every grid-stride loop wraps around).
//
// Device::cuda() is served by core/cuda's own kernels on the CPU emulator (core/cuda/emulator),
// under two thread orders, and by the real GPU when there is one (tests/support/emulated_cuda.h).
// A coverage test fails when a Backend method or an op enum value has no case here.
#include <cstdlib>
#include <functional>
#include <map>
#include <set>

#include "tests/support/reference.h"
#include "tests/support/emulated_cuda.h"
#include "tests/support/recording_backend.h"
#include "tests/support/scoped_environment.h"

using namespace axiom;
using namespace axiom::test;
using axiom::Device;

namespace {

using V = std::vector<Tensor>;

struct OpCase {
  std::string name;
  V inputs;                        // made on the CPU
  std::function<V(const V&)> run;  // the op(s), on any device
};

Tensor positive(const Tensor& x) { return core::add(core::abs(x), 0.5); }

// The layouts a kernel must read in place, each a view of x ([rows, cols] or larger) on its device.
struct View {
  std::string name;
  std::function<Tensor(const Tensor&)> of;
};
const std::vector<View>& views() {
  static const std::vector<View> all = {
      {"contiguous", [](const Tensor& x) { return x; }},
      {"transposed", [](const Tensor& x) { return x.transpose(0, 1); }},
      {"offset and strided", [](const Tensor& x) { return x.narrow(0, 1, x.size(0) - 1).slice(1, 1, x.size(1), 2); }},
      {"broadcast row",
       [](const Tensor& x) {
         return x.narrow(0, 0, 1).expand({3, x.size(1)});
       }},
  };
  return all;
}

// Sizes that break elementwise kernels, as [rows, cols]: empty, 1, 31, 257, and 600 (more than the
// 2 blocks of 256 threads that one schedule caps grids at).
const std::vector<Shape> kElementwiseShapes = {{0, 5}, {1, 1}, {1, 31}, {1, 257}, {4, 150}, {6, 7}};

V all_unary(const Tensor& t) {
  return V{core::neg(t),
           core::abs(t),
           core::exp(t),
           core::log(positive(t)),
           core::sqrt(positive(t)),
           core::rsqrt(positive(t)),
           core::tanh(t),
           core::sigmoid(t),
           core::relu(t),
           core::gelu(t),
           core::gelu_tanh(t),
           core::pow(t, 2.0),
           core::pow(positive(t), 1.5),
           core::gelu_derivative(t),
           core::gelu_tanh_derivative(t)};
}

V all_binary(const Tensor& a, const Tensor& b) {
  return V{core::add(a, b),
           core::sub(a, b),
           core::mul(a, b),
           core::div(a, positive(b)),
           core::pow(positive(a), b),
           core::maximum(a, b),
           core::minimum(a, b),
           core::eq(a, b),
           core::ne(a, b),
           core::lt(a, b),
           core::le(a, b),
           core::gt(a, b),
           core::ge(a, b)};
}

void add_elementwise_cases(std::vector<OpCase>& cases, Dtype dtype, Generator& gen) {
  for (const Shape& shape : kElementwiseShapes) {
    for (const View& view : views()) {
      if (view.name != "contiguous" && (shape[0] < 2 || shape[1] < 2)) continue;  // the view needs two rows and columns
      const std::string where = " of " + str(shape) + ", " + view.name;
      // b is one row, broadcast against every row of a (stride 0), and equal to a in places
      const Tensor a = core::randn(shape, gen, dtype);
      Tensor b = core::randn({1, shape[1]}, gen, dtype);
      cases.push_back({"unary maps" + where, V{a}, [view](const V& x) { return all_unary(view.of(x[0])); }});
      cases.push_back({"binary maps" + where, V{a, b}, [view](const V& x) {
                         const Tensor t = view.of(x[0]);
                         const Tensor row = x[1].narrow(1, 0, 1).expand({1, t.size(1)});  // a column broadcast too
                         V out = all_binary(t, x[1].narrow(1, 0, t.size(1)));
                         for (const Tensor& y : all_binary(t, row)) out.push_back(y);
                         for (const Tensor& y : all_binary(t, t)) out.push_back(y);  // equal operands: eq, le, ge true
                         return out;
                       }});
      cases.push_back({"where and masked_fill" + where, V{a, b}, [view](const V& x) {
                         const Tensor t = view.of(x[0]), row = x[1].narrow(1, 0, t.size(1));
                         const Tensor cond = core::gt(t, row);
                         return V{core::where(cond, t, row), core::masked_fill(t, cond, -7)};
                       }});
    }
  }
}

void add_reduction_cases(std::vector<OpCase>& cases, Dtype dtype, Generator& gen) {
  auto r = [&](const Shape& shape) { return core::randn(shape, gen, dtype); };
  cases.push_back({"reductions over any axes of a permuted view", V{r({3, 4, 5})}, [](const V& x) {
                     const Tensor t = x[0].permute({2, 0, 1});
                     const auto [values, indices] = core::max_with_indices(t, 1);
                     return V{core::sum(t),
                              core::sum(t, {0, 2}),
                              core::mean(t, {1}),
                              core::var(t, {2}),
                              core::max(t, {0}),
                              core::min(t, {0, 2}),
                              values,
                              indices,
                              core::argmax(t, -1),
                              core::sum(x[0], {0, 1}),
                              core::var(t, {0, 1}, false, 0)};
                   }});
  cases.push_back({"reductions of rows longer than a block, along both axes", V{r({3, 300})}, [](const V& x) {
                     V out;
                     for (const Tensor& t : {x[0], x[0].transpose(0, 1)}) {
                       const auto [values, indices] = core::max_with_indices(t, -1);
                       for (const Tensor& y : {core::sum(t, {-1}), core::mean(t, {-1}), core::var(t, {-1}), values,
                                               indices, core::min(t, {-1})}) {
                         out.push_back(y);
                       }
                     }
                     return out;
                   }});
  cases.push_back({"column sums over many rows and tiles (a bias gradient), of views and of three axes",
                   V{r({300, 40}), r({5, 70, 33})}, [](const V& x) {
                     return V{core::sum(x[0], {0}),
                              core::mean(x[0], {0}),
                              core::sum(x[0].narrow(1, 3, 35), {0}),
                              core::sum(x[1], {0, 1}),
                              core::mean(x[1].transpose(0, 1), {0, 1}),
                              core::sum(x[1], {0}, true)};
                   }});
  cases.push_back(
      {"sums of a few outputs over many elements (split over many blocks) of views", V{r({2, 20000})}, [](const V& x) {
         const Tensor t = x[0].transpose(0, 1);  // [20000, 2]
         return V{core::sum(x[0]),
                  core::mean(x[0]),
                  core::sum(x[0], {1}),
                  core::mean(x[0], {1}),
                  core::sum(t, {0}),
                  core::sum(x[0].narrow(1, 1, 16383), {1}),
                  core::sum(x[0].narrow(1, 0, 16384), {1})};
       }});
  cases.push_back(
      {"count_non_finite over 200 tensors (160 not empty) of several sizes and both dtypes with NaN and infinities",
       V{r({257}), r({1}), r({0}), r({5, 8})}, [](const V& x) {
         const Tensor holes = x[0].clone(), wide = x[3].clone();
         holes.reshape({-1}).set({3}, NAN), holes.reshape({-1}).set({200}, INFINITY),
             wide.reshape({-1}).set({39}, -INFINITY);
         std::vector<Tensor> tensors;
         for (int i = 0; i < 200; ++i)
           tensors.push_back(i % 5 == 0   ? holes
                             : i % 5 == 1 ? x[1]
                             : i % 5 == 2 ? x[2]
                             : i % 5 == 3 ? wide
                                          : holes.to(Dtype::float32));
         return V{core::count_non_finite(tensors), core::count_non_finite({x[0]}),
                  core::count_non_finite({wide.transpose(0, 1)})};
       }});
  cases.push_back(
      {"reductions of one element, of a broadcast, and to an empty result", V{r({1}), r({1, 5})}, [](const V& x) {
         const Tensor wide = x[1].expand({4, 5});
         const Tensor empty_rows = x[1].narrow(0, 0, 0);  // [0, 5]
         return V{core::sum(x[0]),
                  core::max(x[0]),
                  core::min(x[0]),
                  core::var(x[0], {}, false, 0),
                  core::sum(wide, {0}),
                  core::max(wide, {0}),
                  core::sum(empty_rows, {1}),
                  core::sum(empty_rows, {0}),
                  core::mean(empty_rows, {0})};
       }});
}

void add_row_cases(std::vector<OpCase>& cases, Dtype dtype, Generator& gen) {
  auto r = [&](const Shape& shape) { return core::randn(shape, gen, dtype); };
  cases.push_back({"softmax and log_softmax along a middle axis", V{r({2, 7, 3})}, [](const V& x) {
                     return V{core::softmax(x[0], 1), core::log_softmax(x[0].transpose(0, 2), -1)};
                   }});
  // rows of up to 1,024 get a warp each, longer ones a block (core/cuda/kernels.cuh, launch_rows)
  cases.push_back(
      {"softmax of rows of 1, 31, 300 and 1100 (a warp's, then a block's)",
       V{r({3, 1}), r({2, 31}), r({3, 300}), r({2, 1100})}, [](const V& x) {
         return V{core::softmax(x[0], -1), core::softmax(x[1], -1),     core::log_softmax(x[1].transpose(0, 1), 0),
                  core::softmax(x[2], -1), core::log_softmax(x[2], -1), core::softmax(x[2].transpose(0, 1), 0),
                  core::softmax(x[3], -1), core::log_softmax(x[3], -1)};
       }});
  // the uniforms: sigmoid of normal draws, in (0, 1); the logits' rows strided, one of them all -inf
  cases.push_back({"categorical: rows of 1, 7 and 300, at two temperatures", V{r({4, 7}), r({4}), r({3, 300}), r({3})},
                   [](const V& x) {
                     const Tensor u = core::sigmoid(x[1]), wide_u = core::sigmoid(x[3]);
                     const Tensor no_weight = core::full({1, 7}, -INFINITY, x[0].dtype(), x[0].device());
                     return V{
                         core::categorical(x[0], u),
                         core::categorical(core::mul(x[0].transpose(0, 1), 4.0), core::sigmoid(x[0].select(0, 1)), 0.5),
                         core::categorical(x[0].narrow(1, 0, 1), u),
                         core::categorical(core::concat({x[0], no_weight}, 0), core::concat({u, u.narrow(0, 0, 1)}, 0)),
                         core::categorical(core::mul(x[2], 3.0), wide_u)};
                   }});
  cases.push_back({"layer norm and its backward", V{r({3, 2, 6}), r({6}), r({6}), r({3, 2, 6})}, [](const V& x) {
                     const auto n = core::layer_norm(x[0].transpose(0, 1), x[1], x[2]);
                     return V{
                         n.output, n.mean, n.rstd,
                         core::layer_norm_backward(x[0].transpose(0, 1), x[1], n.mean, n.rstd, x[3].transpose(0, 1))};
                   }});
  cases.push_back({"layer norm of rows of 300 and 1100 and 1, without weight and bias",
                   V{r({5, 300}), r({5, 300}), r({2, 1100}), r({2, 1100})}, [](const V& x) {
                     const auto n = core::layer_norm(x[0]);
                     const auto one = core::layer_norm(x[0].narrow(1, 0, 1));
                     const auto wide = core::layer_norm(x[2]);
                     return V{n.output,
                              n.mean,
                              n.rstd,
                              core::layer_norm_backward(x[0], {}, n.mean, n.rstd, x[1]),
                              one.output,
                              wide.output,
                              wide.mean,
                              wide.rstd,
                              core::layer_norm_backward(x[2], {}, wide.mean, wide.rstd, x[3])};
                   }});
}

void add_matrix_cases(std::vector<OpCase>& cases, Dtype dtype, Generator& gen) {
  auto r = [&](const Shape& shape) { return core::randn(shape, gen, dtype); };
  cases.push_back({"matmul: batched, broadcast, transposed; linear", V{r({2, 3, 4}), r({4, 5}), r({5}), r({2, 5, 4})},
                   [](const V& x) {
                     return V{core::matmul(x[0], x[1]), core::matmul(x[0], x[3].transpose(1, 2)),
                              core::matmul(x[1].transpose(0, 1), x[0].transpose(1, 2)), core::linear(x[0], x[1], x[2]),
                              core::matmul(x[0].select(0, 1), x[1])};
                   }});
  cases.push_back({"matmul: one row, an empty sum, offset views, a broadcast batch, vectors",
                   V{r({3, 6, 5}), r({5, 4})}, [](const V& x) {
                     const Tensor a = x[0].narrow(1, 1, 3);                     // offset rows
                     const Tensor b = x[1].narrow(1, 1, 2);                     // offset columns
                     const Tensor batch = x[1].unsqueeze(0).expand({3, 5, 4});  // stride 0 over the batch
                     return V{core::matmul(a.narrow(1, 0, 1), x[1]),
                              core::matmul(a.narrow(2, 0, 0), x[1].narrow(0, 0, 0)),
                              core::matmul(a, b),
                              core::matmul(x[0], batch),
                              core::matmul(x[1].select(1, 0), x[1]),
                              core::matmul(x[1], x[1].select(0, 2))};
                   }});
  cases.push_back({"matmul: a batch that is not evenly spaced", V{r({2, 3, 4, 5}), r({5, 6})}, [](const V& x) {
                     const Tensor irregular = x[0].transpose(0, 1);  // [3, 2, 4, 5]: matrices 60, 20 elements apart
                     return V{core::matmul(irregular, x[1]), core::matmul(irregular, irregular.transpose(2, 3))};
                   }});
  cases.push_back({"attention_step, with hidden keys and without", V{r({2, 3, 1, 4}), r({2, 3, 4, 5}), r({2, 3, 5, 4})},
                   [](const V& x) {
                     return V{core::attention_step(x[0], x[1], x[2], 0.5),
                              core::attention_step(x[0], x[1], x[2], 0.5, {0, 1, 0, 0, 1})};
                   }});
  cases.push_back({"attention_step_cached: the caches written, the step attended",
                   V{r({2, 24}), r({2, 2, 4, 5}), r({2, 2, 5, 4})}, [](const V& x) {
                     const Tensor keys_t = x[1].clone(), values = x[2].clone();
                     const Tensor out = core::attention_step_cached(x[0], keys_t, values, 3, 1, 0.5, {0, 1, 0});
                     return V{out, keys_t, values};
                   }});
  // attention of qkv x[0] along each of `axes`, then its backward from grad_out x[1]
  auto attention_case = [&](const std::string& name, const V& inputs, std::vector<int64_t> axes, int64_t heads,
                            bool causal) {
    cases.push_back({name + (causal ? ", causal" : ""), inputs, [=](const V& x) {
                       V out;
                       for (const int64_t axis : axes) {
                         const auto mask = core::AttentionMask::causal_if(causal);
                         const auto a = core::attention(x[0], axis, heads, mask);
                         out.push_back(a.output), out.push_back(a.probs);
                         out.push_back(core::attention_backward(x[0], a.probs, x[1], axis, heads, mask));
                       }
                       return out;
                     }});
  };
  for (const bool causal : {false, true}) {
    attention_case("attention along both axes", V{r({2, 3, 4, 12}), r({2, 3, 4, 4})}, {1, 2}, 2, causal);
    attention_case("attention over lines of 1 and 40", V{r({1, 40, 6}), r({1, 40, 2})}, {0, 1}, 1, causal);
    // 4 x 48 x 33 + 2 x 48^2 elements do not fit a block's shared memory: a tile at a time (one tile)
    attention_case("attention over lines too long for shared memory", V{r({1, 48, 192}), r({1, 48, 64})}, {1}, 2,
                   causal);
    // strided lines of 75: a tile of 64 keys and one of 11, the last group of queries 3 rows long
    attention_case("attention over lines of 75 a tile at a time", V{r({75, 2, 30}), r({75, 2, 10})}, {0}, 2, causal);
    // heads 64 wide: float64 tiles of 24 keys (three for a line of 50)
    attention_case("attention over heads 64 wide a tile at a time", V{r({1, 50, 384}), r({1, 50, 128})}, {1}, 2,
                   causal);
    // a head 90 wide over 14 positions: float64 fits neither shared memory nor a tile (the cuBLAS
    // path); float32 fits shared memory
    attention_case("attention over a head too wide for a tile", V{r({1, 14, 270}), r({1, 14, 90})}, {1}, 1, causal);
  }
  // Every score against the first tile of 64 keys is -inf (q's first feature 1, k's -inf), the rest
  // finite: the online softmax must give the CPU's weights, not NaN. (Not causal: there, rows 0..63
  // see only -inf scores, NaN on both devices, and the CPU's NaN also reaches the gradients of keys
  // those rows do not see, as 0 x NaN; the tiled backward leaves unseen keys alone.)
  Tensor hidden_keys = r({1, 75, 12});
  for (int64_t i = 0; i < 75; ++i) hidden_keys.set({0, i, 0}, 1.0);
  for (int64_t j = 0; j < 64; ++j) hidden_keys.set({0, j, 4}, -INFINITY);
  attention_case("attention whose first tile of keys scores -inf", V{hidden_keys, r({1, 75, 4})}, {1}, 1, false);
}

void add_index_cases(std::vector<OpCase>& cases, Dtype dtype, Generator& gen) {
  auto r = [&](const Shape& shape) { return core::randn(shape, gen, dtype); };
  const Tensor idx = core::from_vector<int64_t>({2, 0, 2, 1}, {4});
  const Tensor gather_idx = core::from_vector<int64_t>({0, 2, 1, 1, 0, 0}, {2, 3});
  cases.push_back({"indexing: select, add, embedding, gather, scatter_add", V{r({3, 4}), idx, r({3, 4}), gather_idx},
                   [](const V& x) {
                     return V{core::index_select(x[0], 1, x[1]), core::index_add(x[0], 1, x[1], x[2]),
                              core::embedding(x[0].transpose(0, 1), x[1]), core::gather(x[0].narrow(0, 0, 2), 1, x[3]),
                              core::scatter_add(x[0].narrow(0, 0, 2), 1, x[3], x[2].narrow(0, 0, 2).narrow(1, 0, 3))};
                   }});
  // 257 rows picked from 5, so that many threads add into one element at once
  const Tensor many = core::randint({257}, 0, 5, gen, Dtype::int64);
  const Tensor many_gather = core::randint({2, 257}, 0, 5, gen, Dtype::int64);
  cases.push_back({"indexing with 257 indices into 5 places", V{r({5, 3}), many, r({257, 3}), many_gather, r({2, 257})},
                   [](const V& x) {
                     return V{core::index_select(x[0], 0, x[1]),
                              core::index_add(x[0], 0, x[1], x[2]),
                              core::embedding(x[0], x[1]),
                              core::scatter_add(core::zeros({2, 5}, x[0].dtype(), x[0].device()), 1, x[3], x[4]),
                              core::gather(x[4].narrow(1, 0, 5), 1, x[3]),
                              core::index_select(x[0], 0, x[1].narrow(0, 0, 0))};
                   }});
}

void add_copy_cases(std::vector<OpCase>& cases, Dtype dtype, Generator& gen) {
  auto r = [&](const Shape& shape) { return core::randn(shape, gen, dtype); };
  cases.push_back({"copies: dtype conversions, contiguous, concat, pad, shift, fill", V{r({3, 4})}, [](const V& x) {
                     const Tensor scaled = core::mul(x[0], 100);
                     const Tensor huge = core::mul(x[0], 1e30);  // saturates when converted to integers
                     return V{scaled.to(Dtype::int64),
                              core::abs(scaled).to(Dtype::uint8),
                              huge.to(Dtype::int64),
                              x[0].to(x[0].dtype() == Dtype::float32 ? Dtype::float64 : Dtype::float32),
                              x[0].transpose(0, 1).contiguous(),
                              x[0].narrow(1, 1, 2).expand({2, 3, 2}).contiguous(),
                              core::concat({x[0], x[0].slice(1, 0, 4, 2)}, 1),
                              core::pad(x[0], 1, 1, 2, -1),
                              core::shift(x[0], 0, 1),
                              core::full({2, 3}, 2.5, x[0].dtype(), x[0].device()),
                              core::scalar(3, Dtype::int64, x[0].device()),
                              core::zeros({0, 3}, x[0].dtype(), x[0].device())};
                   }});
}

void add_cross_entropy_cases(std::vector<OpCase>& cases, Dtype dtype, Generator& gen) {
  auto r = [&](const Shape& shape) { return core::randn(shape, gen, dtype); };
  const Tensor targets = core::randint({2, 3}, 0, 300, gen, Dtype::int64), one = core::zeros({4}, Dtype::int64);
  const Tensor wide_targets = core::randint({2}, 0, 1100, gen, Dtype::int64);
  cases.push_back(
      {"cross-entropy and its backward: rows of 300 classes and 1100 (a warp's, then a block's) and of 1",
       V{r({2, 3, 300}), targets, r({2, 3}), r({4, 1}), one, r({2, 1100}), wide_targets}, [](const V& x) {
         V out;
         for (const double smoothing : {0.0, 0.1}) {
           const auto ce = core::cross_entropy(x[0], x[1], smoothing);
           const auto single = core::cross_entropy(x[3], x[4], smoothing);
           const auto wide = core::cross_entropy(x[5], x[6], smoothing);
           for (const Tensor& t :
                {ce.losses, ce.lse, core::cross_entropy_backward(x[0], x[1], ce.lse, x[2], smoothing), single.losses,
                 core::cross_entropy_backward(x[3], x[4], single.lse,
                                              core::ones(single.lse.shape(), single.lse.dtype(), single.lse.device()),
                                              smoothing),
                 wide.losses,
                 core::cross_entropy_backward(x[5], x[6], wide.lse, core::ones({2}, x[5].dtype(), x[5].device()),
                                              smoothing)}) {
             out.push_back(t);
           }
         }
         return out;
       }});
  // row 0 holds a NaN, row 1 +inf, row 2 is all -inf, row 3 has some -inf (finite); 40 classes, so
  // a lane meets a larger logit after a smaller one (its running sum rescaled)
  Tensor odd = core::randn({5, 40}, gen, dtype);
  odd.set({0, 7}, NAN), odd.set({1, 33}, INFINITY), odd.set({3, 0}, -INFINITY), odd.set({3, 39}, -INFINITY);
  for (int64_t c = 0; c < 40; ++c) odd.set({2, c}, -INFINITY);
  cases.push_back({"cross-entropy of rows with a NaN or infinities gives the CPU's non-finite values",
                   V{odd, core::from_vector<int64_t>({1, 2, 3, 4, 5})}, [](const V& x) {
                     const auto ce = core::cross_entropy(x[0], x[1], 0.1);
                     return V{ce.losses, ce.lse};
                   }});
}

void add_optimizer_cases(std::vector<OpCase>& cases, Dtype dtype, Generator& gen) {
  auto r = [&](const Shape& shape) { return core::randn(shape, gen, dtype); };
  // each output is a fresh copy of the state that adam_update changes in place
  cases.push_back({"adam_update: Adam with L2 decay and AdamW over 257 and 1 elements",
                   V{r({257}), r({257}), r({257}), r({1})}, [](const V& x) {
                     V out;
                     for (const bool decoupled : {false, true}) {
                       const Tensor p = x[0].clone(), m = core::mul(x[2], 0.1), v = core::abs(x[2]), one = x[3].clone();
                       const core::AdamStep step{
                           .lr = 0.01, .weight_decay = 0.1, .decoupled_weight_decay = decoupled, .step = 3};
                       core::adam_update(p, x[1], m, v, step);
                       core::adam_update(one, x[3], core::zeros_like(one), core::zeros_like(one), step);
                       for (const Tensor& t : {p, m, v, one}) out.push_back(t);
                     }
                     return out;
                   }});
  // 200 parameters (150 not empty: more than one launch takes), of 257, 1, 0 and 40 elements, each at its own
  // step, a gradient that is a transposed view among them
  cases.push_back(
      {"adam_update_many: 200 parameters of several sizes and steps", V{r({257}), r({1}), r({0}), r({5, 8})},
       [](const V& x) {
         std::vector<core::AdamUpdate> updates;
         for (int i = 0; i < 200; ++i) {
           const Tensor& like = x[i % 4];
           const Tensor grad = i % 4 == 3 ? core::mul(x[3], 0.5).transpose(0, 1).transpose(0, 1) : core::mul(like, 0.5);
           updates.push_back({like.clone(),
                              i == 7 ? x[3].transpose(0, 1).contiguous().transpose(0, 1) : grad,
                              core::mul(like, 0.1),
                              core::abs(like),
                              {.lr = 0.01, .weight_decay = 0.1, .decoupled_weight_decay = i % 2 == 1, .step = 1 + i}});
         }
         core::adam_update_many(updates);
         V out;
         for (const core::AdamUpdate& u : updates)
           out.push_back(u.param), out.push_back(u.exp_avg), out.push_back(u.exp_avg_sq);
         return out;
       }});
}

std::vector<OpCase> op_cases(Dtype dtype) {
  Generator gen(5);
  std::vector<OpCase> cases;
  add_elementwise_cases(cases, dtype, gen);
  add_reduction_cases(cases, dtype, gen);
  add_row_cases(cases, dtype, gen);
  add_matrix_cases(cases, dtype, gen);
  add_index_cases(cases, dtype, gen);
  add_copy_cases(cases, dtype, gen);
  add_cross_entropy_cases(cases, dtype, gen);
  add_optimizer_cases(cases, dtype, gen);
  return cases;
}

// The integer dtypes: the ops that take them.
std::vector<OpCase> integer_cases() {
  Generator gen(6);
  const Tensor a = core::randint({4, 70}, -50, 50, gen, Dtype::int64),
               b = core::randint({1, 70}, -50, 50, gen, Dtype::int64);
  const Tensor pixels = core::randint({4, 70}, 0, 256, gen, Dtype::uint8);
  const Tensor idx = core::from_vector<int64_t>({1, 0, 1}, {3});
  std::vector<OpCase> cases;
  cases.push_back({"int64: unary, arithmetic, comparisons, where, reductions, indexing", V{a, b, idx}, [](const V& x) {
                     const Tensor t = x[0].transpose(0, 1), row = x[1].transpose(0, 1);
                     V out{core::neg(t),           core::abs(t),
                           core::relu(t),          core::add(t, row),
                           core::sub(t, row),      core::mul(t, row),
                           core::maximum(t, row),  core::minimum(t, row),
                           core::eq(t, row),       core::ne(t, row),
                           core::le(t, row),       core::where(core::gt(t, row), t, row),
                           core::sum(x[0], {1}),   core::max(x[0], {0}),
                           core::min(t, {1}),      core::index_add(x[0].narrow(1, 0, 2), 1, x[2], x[0].narrow(1, 0, 3)),
                           x[0].to(Dtype::float32)};
                     return out;
                   }});
  cases.push_back({"uint8: copies, comparisons, where, fill, gather", V{pixels, idx}, [](const V& x) {
                     const Tensor t = x[0].slice(1, 1, 70, 3);
                     return V{t.contiguous(),
                              core::lt(t, t.narrow(0, 0, 1)),
                              core::where(core::ge(t, t), t, t),
                              t.to(Dtype::float64),
                              core::full({5}, 7, Dtype::uint8, x[0].device()),
                              core::index_select(x[0], 0, x[1])};
                   }});
  return cases;
}

V to_device(const V& tensors, Device device) {
  V moved;
  for (const Tensor& t : tensors) moved.push_back(t.to(device));
  return moved;
}

double tolerance_of(Dtype dtype) { return dtype == Dtype::float64 ? 1e-10 : 2e-5; }

// Runs the case on the device in scope and compares each output with the CPU's.
void check_case_on_device(const OpCase& op) {
  const V expected = op.run(op.inputs);
  const V actual = op.run(to_device(op.inputs, Device::cuda()));
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO("output ", i);
    CHECK(actual[i].device() == Device::cuda());
    CHECK(actual[i].dtype() == expected[i].dtype());
    CHECK(actual[i].shape() == expected[i].shape());
    const double tol = tolerance_of(op.inputs[0].dtype());
    check_close(actual[i], values_of(expected[i]), tol, tol, op.name);
  }
}

std::vector<OpCase> every_case() {
  std::vector<OpCase> all = op_cases(Dtype::float64);
  for (OpCase& c : op_cases(Dtype::float32)) all.push_back(std::move(c));
  for (OpCase& c : integer_cases()) all.push_back(std::move(c));
  return all;
}

}  // namespace

TEST_SUITE("cuda-emulated") {
  TEST_CASE("every op on every device equals the CPU in float64 and float32 and int64 and uint8") {
    for (const OpCase& op : every_case()) {
      INFO(op.name, ", ", dtype_name(op.inputs[0].dtype()));
      axiom::test::on_every_device([&] { check_case_on_device(op); });
    }
  }

  TEST_CASE("the harness reaches every backend method and every unary and binary and reduction op") {
    std::set<std::string> calls;
    {
      axiom::test::ScopedEmulatedCuda emulated;  // the build's CUDA backend comes back at the end of the scope
      core::register_backend(DeviceType::cuda, std::make_unique<axiom::test::RecordingBackend>(
                                                   axiom::cuda_emulator::make_backend(), &calls));
      for (const OpCase& op : every_case()) check_case_on_device(op);
      core::backend(Device::cuda()).synchronize();
      (void)core::backend(Device::cuda()).available();
      (void)core::backend(Device::cuda()).memory();
      (void)core::backend(Device::cuda()).release_cached_memory();
      (void)core::backend(Device::cuda()).matmul_precision_unavailable(core::MatmulPrecision::bfloat16);
    }
    axiom::test::report_memory_faults();
    std::set<std::string> expected = axiom::test::kBackendMethods;
    for (int op = 0; op < core::kNumUnaryOps; ++op)
      expected.insert("unary " + std::string(core::op_name(core::UnaryOp(op))));
    for (int op = 0; op < core::kNumBinaryOps; ++op)
      expected.insert("binary " + std::string(core::op_name(core::BinaryOp(op))));
    for (int op = 0; op < core::kNumReduceOps; ++op)
      expected.insert("reduce " + std::string(core::op_name(core::ReduceOp(op))));
    for (const char* method : {"unary", "binary", "reduce"}) expected.erase(method);
    for (const std::string& call : expected) {
      INFO("no case of the harness calls ", call);
      CHECK(calls.count(call) == 1);
    }
  }

  TEST_CASE("tensors move between devices and back unchanged and mixing devices is an Error") {
    axiom::test::on_every_device([] {
      Generator gen(1);
      const Tensor x = core::randn({3, 4}, gen, Dtype::float64);
      const Tensor on_device = x.transpose(0, 1).to(Device::cuda());
      CHECK(on_device.device() == Device::cuda());
      check_equal(on_device.to(Device::cpu()), values_of(x.transpose(0, 1)));
      CHECK(on_device.at({2, 1}) == x.at({1, 2}));
      CHECK_THROWS_WITH_AS(core::add(x.transpose(0, 1), on_device), doctest::Contains("different devices"), Error);
      CHECK_THROWS_WITH_AS(on_device.data<double>(), doctest::Contains("move it to the cpu"), Error);
    });
  }

  TEST_CASE("with AXIOM_CUDA_SYNC=1 every launch is waited for and a faulting kernel is named by its op and launch") {
    axiom::test::ScopedEmulatedCuda emulated;
    Generator gen(4);
    const Tensor x = core::randn({5}, gen, Dtype::float32).to(Device::cuda());
    auto synchronizations = [] { return axiom::cuda_emulator::traffic_stats().synchronizations; };
    auto launches = [] { return axiom::cuda_emulator::grid_stats().launches; };
    int64_t waits = synchronizations();
    (void)core::exp(x);
    CHECK(synchronizations() == waits);  // without the variable: no wait
    {
      axiom::test::ScopedEnvironment sync("AXIOM_CUDA_SYNC", "1");
      waits = synchronizations();
      const int64_t launched = launches();
      (void)core::softmax(core::exp(x), 0);
      CHECK(launches() - launched == 2);
      CHECK(synchronizations() - waits == 2);  // one wait per launch
      axiom::cuda_emulator::plant_kernel_fault();
      CHECK_THROWS_WITH_AS(
          (void)core::exp(x),
          doctest::Contains("CUDA error cudaErrorIllegalAddress in the kernel launched at core/cuda/elementwise.cu:"),
          Error);
    }
    axiom::cuda_emulator::plant_kernel_fault();  // without the variable, the fault surfaces at the next wait, under its
                                                 // name
    CHECK_THROWS_WITH_AS(core::backend(Device::cuda()).synchronize(),
                         doctest::Contains("[synchronize] CUDA error cudaErrorIllegalAddress"), Error);
  }

  // On the GPU an op checks its indices there and does not wait for the result: the CPU's Error comes
  // at the next read back to the host (or synchronize), naming the op, the value and its position,
  // and the kernels skip the bad index meanwhile instead of reading outside their tensor.
  TEST_CASE("an index out of range on the device is the CPU's Error at the next read back to the host") {
    axiom::test::ScopedEmulatedCuda emulated;
    const Device gpu = Device::cuda();
    const Tensor x = core::zeros({3, 4, 5}).to(gpu), weight = core::zeros({7, 2}).to(gpu);
    Tensor index = core::zeros({3, 2, 5}, Dtype::int64);
    index.set({2, 1, 3}, 4);
    const Tensor transposed = core::from_vector<int64_t>({0, 1, 2, 7}, {2, 2}).transpose(0, 1);  // [[0, 2], [1, 7]]
    const Tensor logits = core::zeros({4, 3}).to(gpu);
    const std::vector<std::pair<std::function<Tensor()>, std::string>> cases = {
        {[&] {
           return core::index_select(x, 1, core::from_vector<int64_t>({0, 4, 1}).to(gpu));
         },
         "[index_select] index 4 at [1] is out of range for axis 1 of size 4"},
        {[&] {
           return core::index_add(x, 0, core::from_vector<int64_t>({3}).to(gpu), core::zeros({1, 4, 5}).to(gpu));
         },
         "[index_add] index 3 at [0] is out of range for axis 0 of size 3"},
        {[&] {
           return core::embedding(weight, core::from_vector<int64_t>({0, 1, 2, 3, 4, 9}, {2, 3}).to(gpu));
         },
         "[embedding] index 9 at [1, 2] is out of range for axis 0 of size 7"},
        {[&] { return core::embedding(weight, transposed.to(gpu)); }, "[embedding] index 7 at [1, 1] is out of range"},
        {[&] { return core::gather(x, 1, index.to(gpu)); },
         "[gather] index 4 at [2, 1, 3] is out of range for axis 1 of size 4"},
        {[&] {
           return core::scatter_add(x, 1, index.to(gpu), core::zeros({3, 2, 5}).to(gpu));
         },
         "[scatter_add] index 4 at [2, 1, 3] is out of range for axis 1 of size 4"},
        {[&] {
           return core::cross_entropy(logits, core::from_vector<int64_t>({0, 2, 3, 1}).to(gpu), 0.0).losses;
         },
         "[cross_entropy] target 3 (element 2 of the targets) is not a class in [0, 3)"},
    };
    for (const auto& [op, message] : cases) {
      INFO(message);
      const int64_t copies = axiom::cuda_emulator::traffic_stats().device_to_host;
      Tensor result;
      CHECK_NOTHROW(result = op());  // no wait for the GPU here
      CHECK(axiom::cuda_emulator::traffic_stats().device_to_host == copies);
      check_error([&] { (void)result.to(Device::cpu()); }, {message});
      CHECK_NOTHROW((void)result.to(Device::cpu()));  // reported once
    }
    // A read of nothing waits for nothing: it leaves the checks to the next read.
    const Tensor bad_rows = core::embedding(weight, core::from_vector<int64_t>({7}).to(gpu));
    CHECK_NOTHROW((void)core::zeros({0}, Dtype::float32, gpu).to(Device::cpu()));
    check_error([&] { (void)bad_rows.to(Device::cpu()); }, {"[embedding] index 7 at [0] is out of range"});
    // Two bad ops before a read: the first one's Error. synchronize() reports too.
    (void)core::gather(x, 1, index.to(gpu));
    (void)core::embedding(weight, transposed.to(gpu));
    check_error([&] { core::backend(gpu).synchronize(); }, {"[gather] index 4"});
    CHECK_NOTHROW(core::backend(gpu).synchronize());
    // More checks than the slots that wait for a read: the checks wait for the GPU on their own.
    const Tensor good = core::from_vector<int64_t>({0, 6}).to(gpu), bad = core::from_vector<int64_t>({0, 8}).to(gpu);
    (void)core::embedding(weight, bad);
    check_error(
        [&] {
          for (int i = 0; i < 300; ++i) (void)core::embedding(weight, good);
        },
        {"[embedding] index 8 at [1]"});
    CHECK(core::embedding(weight, good).to(Device::cpu()).shape() == core::Shape{2, 2});
    axiom::test::report_memory_faults();
  }

  // A whole-tensor sum of more elements than 1,024 chunks of 4,096: the chunks grow, none is left out.
  TEST_CASE("a sum of more elements than the split sum's chunks hold counts every element") {
    axiom::test::ScopedEmulatedCuda emulated;
    const int64_t n = 1024 * 4096 + 1000;
    const Tensor ones = core::ones({n}, Dtype::float32, Device::cuda());
    CHECK(core::sum(ones).to(Device::cpu()).item() == double(n));
    CHECK(core::mean(core::ones({2, n / 2}, Dtype::float64, Device::cuda()), {1}).to(Device::cpu()).at({1}) == 1.0);
    axiom::test::report_memory_faults();
  }

  TEST_CASE("the device says how much memory it has and its allocator holds, and gives the held blocks back") {
    axiom::test::ScopedEmulatedCuda emulated;
    core::Backend& cuda = core::backend(Device::cuda());
    (void)cuda.release_cached_memory();  // blocks other tests left in the cache
    const core::MachineMemory start = cuda.memory();
    CHECK(start.total == axiom::cuda_emulator::kDeviceBytes);
    { const Tensor block = core::empty({1 << 20}, Dtype::float32, Device::cuda()); }  // 4 MiB, freed into the cache
    CHECK(cuda.memory().available == start.available);  // a cached block is still memory a tensor can get
    CHECK(axiom::cuda_emulator::memory_stats().live_bytes >= size_t(4) << 20);
    CHECK(cuda.release_cached_memory() == size_t(4) << 20);
    CHECK(axiom::cuda_emulator::memory_stats().live_bytes < size_t(4) << 20);
    CHECK(cuda.memory().available == start.available);
    CHECK(cuda.release_cached_memory() == 0);
  }

  // What one product asked of the emulated GPU besides kernels: the calls of each cuBLAS entry, and
  // the copies from host to device (a batched call's pointer arrays).
  struct ProductTraffic {
    std::map<std::string, int64_t> cublas_calls;
    int64_t uploads = 0;
  };

  ProductTraffic traffic_of(const std::function<Tensor()>& product, const Tensor& expected) {
    const axiom::cuda_emulator::TrafficStats before = axiom::cuda_emulator::traffic_stats();
    const Tensor out = product();
    const axiom::cuda_emulator::TrafficStats after = axiom::cuda_emulator::traffic_stats();
    check_close(out.to(Device::cpu()), values_of(expected), 1e-5, 1e-5, "product");
    return {axiom::test::cublas_calls_between(before, after), after.host_to_device - before.host_to_device};
  }

  TEST_CASE(
      "products reach cuBLAS in as few calls as their layout allows and upload nothing when the batch is regular") {
    axiom::test::ScopedEmulatedCuda emulated;
    Generator gen(3);
    const Tensor x = core::randn({2, 3, 4, 5}, gen, Dtype::float32), w = core::randn({5, 6}, gen, Dtype::float32);
    const Tensor bias = core::randn({6}, gen, Dtype::float32), g = core::randn({2, 3, 4, 6}, gen, Dtype::float32);
    const Tensor a = core::randn({3, 4, 5}, gen, Dtype::float32), b = core::randn({3, 5, 2}, gen, Dtype::float32);
    const Tensor xd = x.to(Device::cuda()), wd = w.to(Device::cuda()), biasd = bias.to(Device::cuda()),
                 gd = g.to(Device::cuda());
    const Tensor ad = a.to(Device::cuda()), bd = b.to(Device::cuda());
    using Calls = std::map<std::string, int64_t>;

    SUBCASE("a linear layer: the batch folds into the rows of one gemm") {
      const ProductTraffic t = traffic_of([&] { return core::linear(xd, wd, biasd); }, core::linear(x, w, bias));
      CHECK(t.cublas_calls == Calls{{"cublasSgemm", 1}});
      CHECK(t.uploads == 0);
    }
    SUBCASE("a weight gradient: one gemm over every row of the batch") {
      auto grad = [](const Tensor& in, const Tensor& out) {
        return core::matmul(in.reshape({-1, 5}).transpose(0, 1), out.reshape({-1, 6}));
      };
      const ProductTraffic t = traffic_of([&] { return grad(xd, gd); }, grad(x, g));
      CHECK(t.cublas_calls == Calls{{"cublasSgemm", 1}});
      CHECK(t.uploads == 0);
    }
    SUBCASE("a contiguous batch and a broadcast one: one strided-batched call") {
      ProductTraffic t = traffic_of([&] { return core::matmul(ad, bd); }, core::matmul(a, b));
      CHECK(t.cublas_calls == Calls{{"cublasSgemmStridedBatched", 1}});
      CHECK(t.uploads == 0);
      t = traffic_of([&] { return core::matmul(ad.select(0, 0), bd); }, core::matmul(a.select(0, 0), b));
      CHECK(t.cublas_calls == Calls{{"cublasSgemmStridedBatched", 1}});
      CHECK(t.uploads == 0);
    }
    SUBCASE("a batch that is not evenly spaced: one pointer per matrix, uploaded once") {
      const Tensor irregular = xd.transpose(0, 1);  // [3, 2, 4, 5]: matrices 60, 20 elements apart
      const ProductTraffic t =
          traffic_of([&] { return core::matmul(irregular, wd); }, core::matmul(x.transpose(0, 1), w));
      CHECK(t.cublas_calls == Calls{{"cublasSgemmBatched", 1}});
      CHECK(t.uploads == 1);
    }
    axiom::test::report_memory_faults();
  }

}  // TEST_SUITE
