// The bfloat16 dtype (core/dtype.h): conversion to and from float32 against the scalar rounding,
// element access, products of bfloat16 operands against matmul's bfloat16 precision (the same
// bits) and against loops in double, and the refusals of every other use.
#include <cfloat>
#include <cmath>

#include "core/cpu/bfloat16.h"
#include "tests/support/emulated_cuda.h"
#include "tests/support/matmul_precision.h"
#include "tests/support/reference.h"

namespace axiom::test {

using core::Tensor;

namespace {

using core::MatmulPrecision;

// The 16 bits of each element of a bfloat16 tensor, row-major.
std::vector<uint16_t> bits_of(const Tensor& x16) {
  const Tensor c = x16.contiguous();
  return {c.data<uint16_t>(), c.data<uint16_t>() + c.numel()};
}

// Equal element for element, NaN meeting NaN (float32 tensors).
bool same_values(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return false;
  const std::vector<float> x = a.to_vector<float>(), y = b.to_vector<float>();
  for (size_t i = 0; i < x.size(); ++i) {
    if (!(x[i] == y[i] || (std::isnan(x[i]) && std::isnan(y[i])))) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("bfloat16: a 2-byte dtype that arithmetic does not take") {
  CHECK(dtype_size(Dtype::bfloat16) == 2);
  CHECK(dtype_name(Dtype::bfloat16) == "bfloat16");
  CHECK_FALSE(is_floating(Dtype::bfloat16));
  CHECK(core::empty({3, 5}, Dtype::bfloat16).storage()->nbytes() == 30);
}

TEST_CASE("bfloat16: .to rounds float32 as round_to_bfloat16 does, from any layout, and back exactly") {
  Generator gen(7);
  // values of every size, ties, infinities, NaN, the largest float32 (rounds to infinity), zeros
  Tensor x = core::randn({37, 41}, gen);
  const std::vector<float> specials = {
      1.0f + 0x1p-8f, 1.0f + 0x1p-7f + 0x1p-8f, INFINITY, -INFINITY, NAN, FLT_MAX, -0.0f, 1e-40f, -3e38f};
  for (size_t i = 0; i < specials.size(); ++i) x.set({0, static_cast<int64_t>(i)}, specials[i]);
  for (const bool transposed : {false, true}) {
    CAPTURE(transposed);
    const Tensor source = transposed ? x.transpose(0, 1) : x;  // a strided read
    const Tensor x16 = source.to(Dtype::bfloat16);
    CHECK(x16.dtype() == Dtype::bfloat16);
    CHECK(x16.shape() == source.shape());
    const Tensor c = source.contiguous();
    const std::vector<uint16_t> bits = bits_of(x16);
    int64_t wrong = 0;
    for (int64_t i = 0; i < c.numel(); ++i) wrong += bits[i] != core::cpu::round_to_bfloat16(c.data<float>()[i]);
    CHECK(wrong == 0);
    // back to float32: exactly the rounded values (NaN stays NaN)
    const Tensor back = x16.to(Dtype::float32);
    for (int64_t i = 0; i < c.numel(); ++i) {
      const float expected = core::cpu::bfloat16_to_float(bits[i]), got = back.contiguous().data<float>()[i];
      if (std::isnan(expected) ? !std::isnan(got) : got != expected) ++wrong;
    }
    CHECK(wrong == 0);
  }
  // a bfloat16 view copied stays bfloat16, the same bits
  const Tensor x16 = x.to(Dtype::bfloat16);
  const Tensor copied = x16.transpose(0, 1).contiguous();
  CHECK(copied.dtype() == Dtype::bfloat16);
  CHECK(bits_of(copied) == bits_of(x16.transpose(0, 1)));
  CHECK(x16.at({0, 0}) == 1.0);       // the tie rounded down to the even 1
  CHECK(std::isinf(x16.at({0, 5})));  // FLT_MAX: beyond bfloat16's largest finite value
  const std::string printed = x16.narrow(1, 0, 2).narrow(0, 0, 1).to_string();  // [[1, 1.015625]]
  CHECK(printed.find("1.01") != std::string::npos);
  CHECK(printed.find("bfloat16") != std::string::npos);
  CHECK(core::full({2}, 3.15, Dtype::bfloat16).at({1}) == 3.15625);  // made in float32, rounded
  const Tensor one = core::zeros({1}).to(Dtype::bfloat16);
  one.set({0}, 3.15);  // set rounds too: 3.15 is 3.15625 in bfloat16
  CHECK(one.item() == 3.15625);
}

TEST_CASE("bfloat16: matmul and linear of bfloat16 operands give float32, matmul's bfloat16 bits") {
  if (!bfloat16_products_here()) return;
  Generator gen(8);
  const Tensor x = core::randn({2, 70, 80}, gen), w = core::randn({80, 60}, gen), bias = core::randn({60}, gen);
  const Tensor x16 = x.to(Dtype::bfloat16), w16 = w.to(Dtype::bfloat16);
  const Tensor product = core::matmul(x16, w16), dense = core::linear(x16, w16, bias);
  CHECK(product.dtype() == Dtype::float32);
  CHECK(product.shape() == Shape{2, 70, 80 - 20});
  {
    const PrecisionForTest bfloat16(MatmulPrecision::bfloat16);  // rounds float32 operands at the product
    CHECK(same_values(product, core::matmul(x, w)));
    CHECK(same_values(dense, core::linear(x, w, bias)));
    CHECK(same_values(core::matmul(w16.transpose(0, 1), x16.select(0, 1).transpose(0, 1)),
                      core::matmul(w.transpose(0, 1), x.select(0, 1).transpose(0, 1))));  // transposed operands
  }
  // and a small product of bfloat16 operands is one too (no precision setting needed): exact
  // products of the rounded values, summed in float32
  const Tensor a16 = core::randn({3, 5}, gen).to(Dtype::bfloat16), b16 = core::randn({5, 2}, gen).to(Dtype::bfloat16);
  check_close(core::matmul(a16, b16), product_reference(a16.to(Dtype::float32), b16.to(Dtype::float32), unchanged),
              {1e-6, 1e-6}, "small");
  // a batch of separate matrices, broadcast
  const Tensor ws16 = core::randn({2, 1, 5, 4}, gen).to(Dtype::bfloat16);
  const Tensor batched = core::matmul(core::randn({3, 3, 5}, gen).to(Dtype::bfloat16), ws16);
  CHECK(batched.shape() == Shape{2, 3, 3, 4});
  CHECK(batched.dtype() == Dtype::float32);
}

TEST_CASE("bfloat16: products on the meta device give float32 shapes") {
  const Tensor a16 = core::empty({70, 80}, Dtype::bfloat16, Device::meta());
  const Tensor product = core::matmul(a16, a16.transpose(0, 1));
  CHECK(product.dtype() == Dtype::float32);
  CHECK(product.shape() == Shape{70, 70});
  CHECK(core::empty({70, 80}, Dtype::float32, Device::meta()).to(Dtype::bfloat16).dtype() == Dtype::bfloat16);
}

// The kernels that write a product's operand in bfloat16 as they make it: the float32 kernel's
// values, rounded (rows longer than the 2,048 floats they round at a time, and NaN and infinities).
TEST_CASE("bfloat16 outputs: layer norm, activations and a gradient with its sums, the float32 values rounded") {
  Generator gen(10);
  const Tensor x = core::randn({3, 5000}, gen), w = core::randn({5000}, gen), b = core::randn({5000}, gen);
  x.set({1, 7}, NAN), x.set({2, 2100}, INFINITY);
  for (const bool transposed : {false, true}) {
    CAPTURE(transposed);
    const Tensor rows = transposed ? core::randn({64, 9}, gen).transpose(0, 1) : x;  // a strided read
    const Tensor rw = transposed ? Tensor() : w, rb = transposed ? Tensor() : b;
    // (the rounding kernel reads rows made contiguous, whose float32 sums run in SIMD)
    const core::LayerNormResult plain = core::layer_norm(rows.contiguous(), rw, rb, 1e-5),
                                rounded = core::layer_norm(rows, rw, rb, 1e-5, Dtype::bfloat16);
    CHECK(rounded.output.dtype() == Dtype::bfloat16);
    CHECK(bits_of(rounded.output) == bits_of(plain.output.to(Dtype::bfloat16)));
    CHECK(same_values(rounded.mean, plain.mean));
    CHECK(same_values(rounded.rstd, plain.rstd));
  }
  for (const core::UnaryOp op : {core::UnaryOp::gelu, core::UnaryOp::gelu_tanh, core::UnaryOp::relu}) {
    CAPTURE(op_name(op));
    const Tensor plain = op == core::UnaryOp::relu   ? core::relu(x)
                         : op == core::UnaryOp::gelu ? core::gelu(x)
                                                     : core::gelu_tanh(x);
    CHECK(bits_of(core::activation_to_bfloat16(op, x)) == bits_of(plain.to(Dtype::bfloat16)));
    const Tensor g = core::randn(x.shape(), gen), g_plain = g.clone(), g_rounded = g.clone();
    const Tensor a = core::activation_backward(op, x, g_plain),
                 a16 = core::activation_backward(op, x, g_rounded, Dtype::bfloat16);
    CHECK(bits_of(a16) == bits_of(a.to(Dtype::bfloat16)));
    CHECK(core::sum(core::eq(g_rounded, g_plain).to(Dtype::float64)).item() ==
          core::sum(core::eq(g_plain, g_plain).to(Dtype::float64)).item());  // the same slopes (NaN aside)
  }
  // rows in several blocks of the column sums (core/cpu/reduce.cpp), rows wider than its 4,096
  // columns (summed in blocks of columns), and a 1-D gradient
  for (const Shape& shape : {Shape{3, 50, 70}, Shape{300, 1000}, Shape{20, 5000}, Shape{70}}) {
    CAPTURE(shape);
    const Tensor g = core::randn(shape, gen);
    const core::RoundedWithSums r = core::to_bfloat16_with_sums(g);
    CHECK(bits_of(r.rounded) == bits_of(g.to(Dtype::bfloat16)));
    std::vector<int64_t> leading;
    for (int64_t axis = 0; axis + 1 < g.dim(); ++axis) leading.push_back(axis);
    CHECK(same_values(r.sums, leading.empty() ? g : core::sum(g, leading)));
  }
  check_error(
      [&] { (void)core::layer_norm(x.to(Dtype::float64), {}, {}, 1e-5, Dtype::bfloat16); },
      {"[layer_norm] the output's dtype must be the input's (float64) or, for float32, bfloat16; got bfloat16"});
  check_error([&] { (void)core::activation_to_bfloat16(core::UnaryOp::exp, x); },
              {"[activation_to_bfloat16] the activation must be gelu, gelu_tanh or relu, got exp"});
  check_error([&] { (void)core::to_bfloat16_with_sums(core::scalar(1)); },
              {"[to_bfloat16_with_sums] needs at least one axis, got a scalar"});
  check_error([&] { (void)core::to_bfloat16_with_sums(x.to(Dtype::bfloat16)); },
              {"[to_bfloat16_with_sums] g must be float32, got bfloat16"});
  check_error([&] { (void)core::activation_to_bfloat16(core::UnaryOp::gelu, x.to(Dtype::float64)); },
              {"[activation_to_bfloat16] h must be float32 or bfloat16, got float64"});
  // rows of no columns: mean and rstd are NaN, as in float32
  const core::LayerNormResult empty_rows = core::layer_norm(core::zeros({3, 0}), {}, {}, 1e-5, Dtype::bfloat16);
  CHECK(std::isnan(empty_rows.mean.at({2})));
  CHECK(std::isnan(empty_rows.rstd.at({2})));
}

// An activation between two bfloat16 products (autograd's layer_norm_feedforward), h read in
// bfloat16 or float32: forward, activation(h) rounded; backward, in one pass, h's gradient rounded
// with its sums and activation(h) rounded: the bits of the float32 kernels on h widened, then
// to_bfloat16_with_sums. Rows in several blocks of the column sums, rows longer than the 2,048
// floats rounded at a time (3,000) and wider than the sums' 4,096 columns (5,000: blocks of 256), a
// 1-D h; NaN and infinities. Then no rows, no columns, and transposed (strided) inputs.
TEST_CASE("bfloat16 outputs: an activation between two products, h's gradient rounded with its sums") {
  Generator gen(11);
  for (const Shape& shape : {Shape{3, 50, 70}, Shape{300, 1000}, Shape{4, 3000}, Shape{20, 5000}, Shape{70}}) {
    const Tensor h = core::mul(core::randn(shape, gen), core::scalar(3));
    h.set(std::vector<int64_t>(shape.size(), 1), NAN);
    h.set(std::vector<int64_t>(shape.size(), 2), -INFINITY);
    for (const bool rounded_h : {true, false}) {
      const Tensor h_in = rounded_h ? h.to(Dtype::bfloat16) : h, h32 = h_in.to(Dtype::float32);
      for (const core::UnaryOp op : {core::UnaryOp::gelu, core::UnaryOp::gelu_tanh, core::UnaryOp::relu}) {
        CAPTURE(shape);
        CAPTURE(rounded_h);
        CAPTURE(op_name(op));
        const Tensor g = core::randn(shape, gen), g_before = g.clone(), g_reference = g.clone();
        const Tensor a16 = core::activation_backward(op, h32, g_reference, Dtype::bfloat16);
        const core::RoundedWithSums reference = core::to_bfloat16_with_sums(g_reference);
        const core::ActivationGradRounded fused = core::activation_backward_to_bfloat16(op, h_in, g);
        CHECK(bits_of(fused.activated) == bits_of(a16));
        CHECK(bits_of(fused.grad.rounded) == bits_of(reference.rounded));
        CHECK(same_values(fused.grad.sums, reference.sums));
        CHECK(same_values(g, g_before));  // grad is read, not written
        CHECK(bits_of(core::activation_to_bfloat16(op, h_in)) == bits_of(a16));
      }
    }
  }
  const auto gelu = core::UnaryOp::gelu;
  for (const Shape& shape : {Shape{0, 70}, Shape{5, 0}}) {
    CAPTURE(shape);
    const core::ActivationGradRounded none =
        core::activation_backward_to_bfloat16(gelu, core::ones(shape), core::ones(shape));
    CHECK(none.grad.rounded.shape() == shape);
    CHECK(none.activated.shape() == shape);
    CHECK(same_values(none.grad.sums, core::zeros({shape[1]})));
  }
  const Tensor h_t = core::randn({40, 30}, gen).transpose(0, 1), g_t = core::randn({40, 30}, gen).transpose(0, 1);
  const Tensor g_copy = g_t.contiguous();
  const Tensor a16 = core::activation_backward(gelu, h_t.contiguous(), g_copy, Dtype::bfloat16);
  const core::ActivationGradRounded strided = core::activation_backward_to_bfloat16(gelu, h_t, g_t);
  CHECK(bits_of(strided.activated) == bits_of(a16));
  CHECK(bits_of(strided.grad.rounded) == bits_of(g_copy.to(Dtype::bfloat16)));
  CHECK(same_values(strided.grad.sums, core::sum(g_copy, {0})));
  const Tensor h = core::ones({4, 3}), g = core::ones({4, 3});
  check_error([&] { (void)core::activation_backward_to_bfloat16(core::UnaryOp::exp, h, g); },
              {"[activation_backward_to_bfloat16] the activation must be gelu, gelu_tanh or relu, got exp"});
  check_error([&] { (void)core::activation_backward_to_bfloat16(gelu, h.to(Dtype::float64), g); },
              {"[activation_backward_to_bfloat16] h must be float32 or bfloat16, got float64"});
  check_error([&] { (void)core::activation_backward_to_bfloat16(gelu, h, g.to(Dtype::bfloat16)); },
              {"[activation_backward_to_bfloat16] grad must be float32, got bfloat16"});
  check_error(
      [&] {
        (void)core::activation_backward_to_bfloat16(gelu, h, core::ones({3, 4}));
      },
      {"[activation_backward_to_bfloat16] grad's shape [3, 4] differs from h's shape [4, 3]"});
  check_error([&] { (void)core::activation_backward_to_bfloat16(gelu, core::scalar(1), core::scalar(1)); },
              {"[activation_backward_to_bfloat16] needs at least one axis, got a scalar"});
  check_error([&] { (void)core::activation_backward_to_bfloat16(gelu, h, Tensor()); },
              {"activation_backward_to_bfloat16", "grad"});
}

TEST_CASE("bfloat16: every other use is refused, naming the op") {
  const Tensor x16 = core::ones({2, 3}).to(Dtype::bfloat16);
  const std::string why =
      "bfloat16 tensors only hold matrix products' operands (.to, copies, matmul, linear); "
      "convert with .to(float32) first";
  check_error([&] { (void)core::add(x16, x16); }, {"[add] ", why});
  check_error([&] { (void)core::neg(x16); }, {"[neg] ", why});
  check_error([&] { (void)core::exp(x16); }, {"[exp] ", why});
  check_error([&] { (void)core::sum(x16); }, {"[sum] ", why});
  check_error([&] { (void)core::max(x16, {0}); }, {"[max] ", why});
  check_error([&] { (void)core::pad(x16, 0, 1, 1, 0.0); }, {"[pad] ", why});
  check_error([&] { (void)core::gather(x16, 0, core::zeros({1, 3}, Dtype::int64)); }, {"[gather] ", why});
  Generator gen(9);
  check_error([&] { (void)core::randint({2}, 0, 3, gen, Dtype::bfloat16); }, {"[randint] ", why});
  check_error([&] { (void)core::ones({2}, Dtype::float64).to(Dtype::bfloat16); },
              {"[to] bfloat16 converts to and from float32 only; got float64 to bfloat16"});
  check_error([&] { (void)x16.to(Dtype::int64); },
              {"[to] bfloat16 converts to and from float32 only; got bfloat16 to int64"});
  check_error(
      [&] {
        (void)core::matmul(x16, core::ones({3, 2}));
      },
      {"[matmul] dtypes bfloat16 and float32 differ; convert one with .to(dtype)"});
  if (core::matmul_precision_unavailable_reason(MatmulPrecision::bfloat16).empty()) {
    check_error([&] { (void)core::linear(x16, x16.transpose(0, 1), core::ones({2}, Dtype::float64)); },
                {"[linear] the bias must be float32, got float64"});
  } else {  // (a build without oneDNN, a CPU without AVX-512 BF16: refused before the bias is looked at)
    check_error([&] { (void)core::matmul(x16, x16.transpose(0, 1)); },
                {"[matmul] bfloat16 products cannot run here: "});
  }
}

TEST_CASE("bfloat16: CUDA tensors are refused" * doctest::test_suite("cuda-emulated")) {
  axiom::test::ScopedEmulatedCuda emulated;
  const Tensor a = core::ones({2, 3}).to(Device::cuda(0));
  check_error([&] { (void)a.to(Dtype::bfloat16); }, {"[to] bfloat16 tensors live on the CPU only; got one on cuda:0"});
  check_error(
      [&] {
        (void)core::ones({2, 3}).to(Dtype::bfloat16).to(Device::cuda(0));
      },
      {"[to] bfloat16 tensors live on the CPU only; got one on cuda:0"});
  const Tensor a16 = core::empty({2, 3}, Dtype::bfloat16, Device::cuda(0));
  check_error([&] { (void)core::matmul(a16, a16.transpose(0, 1)); },
              {"[matmul] bfloat16 tensors live on the CPU only; got cuda:0 tensors"});
  check_error([&] { (void)core::activation_to_bfloat16(core::UnaryOp::gelu, a); },
              {"[activation_to_bfloat16] bfloat16 tensors live on the CPU only; got one on cuda:0"});
  check_error([&] { (void)core::activation_backward_to_bfloat16(core::UnaryOp::gelu, a, a); },
              {"[activation_backward_to_bfloat16] bfloat16 tensors live on the CPU only; got one on cuda:0"});
}

}  // namespace axiom::test
