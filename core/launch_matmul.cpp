// The op functions of matrix products (core/launch.h): matmul and linear check their operands and
// size the output; the backends compute (core/cpu/matmul.cpp, core/cuda/matmul.cpp); the autograd
// rules are autograd/ops_matmul.cpp.
#include <atomic>

#include "core/backend.h"
#include "core/checks.h"
#include "core/error.h"
#include "core/factory.h"
#include "core/launch.h"

namespace axiom::core {

namespace {

std::atomic<MatmulPrecision> precision_setting{MatmulPrecision::float32};

// bfloat16 operands multiply on the CPU (or the shape-only meta device), where oneDNN's bfloat16
// products run (MatmulPrecision::bfloat16 has the same condition).
void check_bfloat16_operands(const char* name, const Tensor& a, bool host_like) {
  if (!host_like) throw Error(name, "bfloat16 tensors live on the CPU only; got ", a.device(), " tensors");
  if (a.device().type == DeviceType::meta) return;
  if (const std::string reason = matmul_precision_unavailable_reason(MatmulPrecision::bfloat16); !reason.empty()) {
    throw Error(name, "bfloat16 products cannot run here: ", reason);
  }
}

// A product's result: float32 for bfloat16 operands (their sums are float32), else the operands' dtype.
Dtype product_dtype(Dtype operands) { return operands == Dtype::bfloat16 ? Dtype::float32 : operands; }

// The product's operands as the backend takes them, and its output shape.
struct Product {
  Tensor a, b;  // at least 2-D, expanded to the output's batch shape
  Shape out_shape;
  bool a_vector, b_vector;
};

Product checked_product(const char* name, const Tensor& a, const Tensor& b) {
  checks::defined(name, a, "first");
  checks::defined(name, b, "second");
  checks::same_device(name, a, b);
  checks::same_dtype(name, a, b);
  const bool host_like =
      a.device().type == DeviceType::cpu || a.device().type == DeviceType::meta;  // meta: shapes only
  if (a.dtype() == Dtype::bfloat16) {
    check_bfloat16_operands(name, a, host_like);
  } else {
    checks::floating(name, a);
  }
  if (a.dtype() == Dtype::float32 && matmul_precision() == MatmulPrecision::bfloat16 && !host_like) {
    throw Error(name, "bfloat16 products (set_matmul_precision) run on the CPU only; got ", a.device(), " tensors");
  }
  if (a.dim() == 0 || b.dim() == 0) {
    throw Error(name, "needs operands with at least one axis, got shapes ", a.shape(), " and ", b.shape());
  }
  // Vectors become matrices ([K] -> [1, K] on the left, [K, 1] on the right) and back at the end.
  const Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a;
  const Tensor b2 = b.dim() == 1 ? b.unsqueeze(-1) : b;
  const int64_t m = a2.size(-2), k = a2.size(-1), n = b2.size(-1);
  if (b2.size(-2) != k) {
    throw Error(name, "shapes ", a.shape(), " and ", b.shape(), " cannot be multiplied (", k, " != ", b2.size(-2), ")");
  }
  const Shape a_batch(a2.shape().begin(), a2.shape().end() - 2), b_batch(b2.shape().begin(), b2.shape().end() - 2);
  Shape batch;
  try {
    batch = broadcast_shapes(name, a_batch, b_batch);
  } catch (const Error&) {
    throw Error(name, "batch shapes ", a_batch, " and ", b_batch, " of ", a.shape(), " and ", b.shape(),
                " cannot be broadcast");
  }
  auto with_matrix = [&](int64_t rows, int64_t cols) {
    Shape shape = batch;
    shape.push_back(rows), shape.push_back(cols);
    return shape;
  };
  return {a2.expand(with_matrix(m, k)), b2.expand(with_matrix(k, n)), with_matrix(m, n), a.dim() == 1, b.dim() == 1};
}

Tensor unvectored(Tensor out, const Product& p) {
  if (p.a_vector) out = out.squeeze(-2);
  if (p.b_vector) out = out.squeeze(-1);
  return out;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  const Product p = checked_product("matmul", a, b);
  Tensor out = empty(p.out_shape, product_dtype(a.dtype()), a.device());
  backend(a.device()).matmul(p.a, p.b, out, /*accumulate=*/false);
  return unvectored(out, p);
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  return linear(x, weight, bias, product_dtype(x.dtype()));
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, Dtype output_dtype) {
  const Product p = checked_product("linear", x, weight);
  checks::defined("linear", bias, "bias");
  checks::same_device("linear", x, bias);
  const Dtype sums = product_dtype(x.dtype());
  checks::dtype_is("linear", bias, sums, "the bias");
  if (output_dtype != sums && !(output_dtype == Dtype::bfloat16 && x.dtype() == Dtype::bfloat16)) {
    throw Error("linear", "a product of ", x.dtype(), " operands is written in ", sums,
                " (or in bfloat16, for bfloat16 operands); asked for ", output_dtype);
  }
  if (weight.dim() != 2 || bias.shape() != Shape{weight.size(1)}) {
    throw Error("linear", "needs weight [K, N] and bias [N], got ", weight.shape(), " and ", bias.shape());
  }
  Tensor out = empty(p.out_shape, output_dtype, x.device());
  backend(x.device()).linear(p.a, p.b, bias.contiguous(), out);
  return unvectored(out, p);
}

void set_matmul_precision(MatmulPrecision precision) {
  if (const std::string reason = matmul_precision_unavailable_reason(precision); !reason.empty()) {
    throw Error("set_matmul_precision", to_string(precision), " products cannot run here: ", reason);
  }
  precision_setting = precision;
}

MatmulPrecision matmul_precision() { return precision_setting.load(); }

std::string matmul_precision_unavailable_reason(MatmulPrecision precision) {
  return backend(Device::cpu()).matmul_precision_unavailable(precision);  // (a process setting of the CPU's products)
}

std::string to_string(MatmulPrecision precision) {
  switch (precision) {
    case MatmulPrecision::bfloat16: return "bfloat16";
    case MatmulPrecision::tf32: return "tf32";
    default: return "float32";
  }
}

MatmulPrecision parse_matmul_precision(const std::string& word) {
  if (word == "float32") return MatmulPrecision::float32;
  if (word == "bfloat16") return MatmulPrecision::bfloat16;
  if (word == "tf32") return MatmulPrecision::tf32;
  throw Error("matmul precision", "expected float32, bfloat16 or tf32, got '", word, "'");
}

}  // namespace axiom::core
