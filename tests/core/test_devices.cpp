// One harness for every op on every device (after ggml's test-backend-ops): each case runs its
// op functions on CPU inputs and on the same inputs moved to Device::cuda(), and the results
// must agree. The cases build strided views (transposes, slices, broadcasts) on the device
// themselves, so the device kernels see the same layouts as the CPU ones.
//
// Device::cuda() is served by EmulatedCuda (tests/support/emulated_cuda.h), which checks the
// op functions' device handling, and by the real CUDA kernels when a GPU is present.
#include <functional>

#include "tests/core/reference.h"
#include "tests/support/emulated_cuda.h"

using namespace axiom;
using namespace axiom::test;
using core::Device;

namespace {

struct OpCase {
  std::string name;
  std::vector<Tensor> inputs;                                           // made on the CPU
  std::function<std::vector<Tensor>(const std::vector<Tensor>&)> run;   // the op(s), on any device
};

Tensor positive(const Tensor& x) { return core::add(core::abs(x), 0.5); }

std::vector<OpCase> op_cases(Dtype dtype) {
  Generator gen(5);
  auto r = [&](const Shape& shape) { return core::randn(shape, gen, dtype); };
  const Tensor idx = core::from_vector<int64_t>({2, 0, 2, 1}, {4});
  const Tensor gather_idx = core::from_vector<int64_t>({0, 2, 1, 1, 0, 0}, {2, 3});
  std::vector<OpCase> cases;
  auto add_case = [&](std::string name, std::vector<Tensor> inputs, auto run) {
    cases.push_back({std::move(name), std::move(inputs), run});
  };
  using V = std::vector<Tensor>;
  add_case("unary maps of a transposed view", V{r({3, 5})}, [](const V& x) {
    const Tensor t = x[0].transpose(0, 1);
    return V{core::neg(t), core::abs(t), core::exp(t), core::log(positive(t)), core::sqrt(positive(t)), core::rsqrt(positive(t)),
             core::tanh(t), core::sigmoid(t), core::relu(t), core::gelu(t), core::gelu_tanh(t), core::pow(t, 2.0),
             core::pow(positive(t), 1.5), core::gelu_derivative(t), core::gelu_tanh_derivative(t)};
  });
  add_case("binary maps with broadcasting", V{r({4, 1, 3}), r({5, 1})}, [](const V& x) {
    const Tensor a = x[0], b = x[1];
    return V{core::add(a, b), core::sub(a, b), core::mul(a, b), core::div(a, positive(b)), core::pow(positive(a), b),
             core::maximum(a, b), core::minimum(a, b), core::eq(a, a), core::lt(a, b), core::ge(a, b), core::gt(a, b)};
  });
  add_case("where and masked_fill", V{r({3, 4}), r({4})}, [](const V& x) {
    const Tensor cond = core::gt(x[0], x[1]);
    return V{core::where(cond, x[0], x[1]), core::masked_fill(x[0], cond, -7)};
  });
  add_case("reductions over any axes of a permuted view", V{r({3, 4, 5})}, [](const V& x) {
    const Tensor t = x[0].permute({2, 0, 1});
    const auto [values, indices] = core::max_with_indices(t, 1);
    return V{core::sum(t), core::sum(t, {0, 2}), core::mean(t, {1}), core::var(t, {2}), core::max(t, {0}), values, indices,
             core::argmax(t, -1), core::sum(x[0], {0, 1})};
  });
  add_case("softmax and log_softmax along a middle axis", V{r({2, 7, 3})}, [](const V& x) {
    return V{core::softmax(x[0], 1), core::log_softmax(x[0].transpose(0, 2), -1)};
  });
  add_case("matmul: batched, broadcast, transposed; linear", V{r({2, 3, 4}), r({4, 5}), r({5}), r({2, 5, 4})}, [](const V& x) {
    return V{core::matmul(x[0], x[1]), core::matmul(x[0], x[3].transpose(1, 2)), core::matmul(x[1].transpose(0, 1), x[0].transpose(1, 2)),
             core::linear(x[0], x[1], x[2]), core::matmul(x[0].select(0, 1), x[1])};
  });
  add_case("layer norm and its backward", V{r({3, 2, 6}), r({6}), r({6}), r({3, 2, 6})}, [](const V& x) {
    const auto n = core::layer_norm(x[0].transpose(0, 1), x[1], x[2]);
    return V{n.output, n.mean, n.rstd, core::layer_norm_backward(x[0].transpose(0, 1), x[1], n.mean, n.rstd, x[3].transpose(0, 1))};
  });
  for (const bool causal : {false, true}) {
    add_case(std::string("attention along both axes") + (causal ? ", causal" : ""), V{r({2, 3, 4, 12}), r({2, 3, 4, 4})},
             [causal](const V& x) {
               V out;
               for (int64_t axis : {1, 2}) {
                 const auto a = core::attention(x[0], axis, 2, causal);
                 out.push_back(a.output), out.push_back(a.probs);
                 out.push_back(core::attention_backward(x[0], a.probs, x[1], axis, 2));
               }
               return out;
             });
  }
  add_case("indexing: select, add, embedding, gather, scatter_add", V{r({3, 4}), idx, r({3, 4}), gather_idx}, [](const V& x) {
    return V{core::index_select(x[0], 1, x[1]), core::index_add(x[0], 1, x[1], x[2]), core::embedding(x[0].transpose(0, 1), x[1]),
             core::gather(x[0].narrow(0, 0, 2), 1, x[3]), core::scatter_add(x[0].narrow(0, 0, 2), 1, x[3], x[2].narrow(0, 0, 2).narrow(1, 0, 3))};
  });
  add_case("copies: dtype conversions, contiguous, concat, pad, shift", V{r({3, 4})}, [](const V& x) {
    const Tensor scaled = core::mul(x[0], 100);
    return V{scaled.to(Dtype::int64), core::abs(scaled).to(Dtype::uint8), x[0].transpose(0, 1).contiguous(),
             core::concat({x[0], x[0].slice(1, 0, 4, 2)}, 1), core::pad(x[0], 1, 1, 2, -1), core::shift(x[0], 0, 1),
             core::full({2, 3}, 2.5, x[0].dtype(), x[0].device()), core::scalar(3, Dtype::int64, x[0].device())};
  });
  return cases;
}

std::vector<Tensor> to_device(const std::vector<Tensor>& tensors, Device device) {
  std::vector<Tensor> moved;
  for (const Tensor& t : tensors) moved.push_back(t.to(device));
  return moved;
}

}  // namespace

TEST_CASE("every op on every device equals the CPU, float64 and float32") {
  for (const Dtype dtype : {Dtype::float64, Dtype::float32}) {
    for (const OpCase& op : op_cases(dtype)) {
      INFO(op.name, ", ", dtype_name(dtype));
      const std::vector<Tensor> expected = op.run(op.inputs);
      axiom::testing::on_every_device([&] {
        const std::vector<Tensor> actual = op.run(to_device(op.inputs, Device::cuda()));
        REQUIRE(actual.size() == expected.size());
        for (size_t i = 0; i < actual.size(); ++i) {
          INFO("output ", i);
          CHECK(actual[i].device() == Device::cuda());
          CHECK(actual[i].dtype() == expected[i].dtype());
          CHECK(actual[i].shape() == expected[i].shape());
          const double tol = dtype == Dtype::float64 ? 1e-10 : 2e-5;
          check_close(actual[i], values_of(expected[i]), tol, tol, op.name);
        }
      });
    }
  }
}

TEST_CASE("tensors move between devices and back unchanged; mixing devices is an Error") {
  axiom::testing::on_every_device([] {
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
