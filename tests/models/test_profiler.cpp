// The profiler (autograd/profiler.h): ops and backward rules under their names, with bytes and
// FLOPs; custom ops as one row; ranges; events that nest; a Chrome trace that is valid JSON in the
// Trace Event Format; and on training steps of a tiny model, rows that add up to the steps' time.
#include <algorithm>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "autograd/custom_op.h"
#include "autograd/factory.h"
#include "autograd/profiler.h"
#include "models/models.h"
#include "tests/support/matmul_precision.h"
#include "tests/support/reference.h"
#include "tests/support/tiny_models.h"

using namespace axiom;

namespace {

const ProfileRow* row_of(const std::vector<ProfileRow>& rows, const std::string& name, const std::string& pass) {
  const auto found =
      std::find_if(rows.begin(), rows.end(), [&](const ProfileRow& r) { return r.name == name && r.pass == pass; });
  return found == rows.end() ? nullptr : &*found;
}

// On each thread, two events are nested or apart, never overlapping in part.
void check_nested(const std::vector<ProfileEvent>& events) {
  std::map<int, std::vector<const ProfileEvent*>> by_thread;
  for (const ProfileEvent& e : events) by_thread[e.thread].push_back(&e);
  for (auto& [thread, list] : by_thread) {
    for (const ProfileEvent* a : list) {
      CHECK(a->start_ns <= a->end_ns);
      for (const ProfileEvent* b : list) {
        const bool apart = a->end_ns <= b->start_ns || b->end_ns <= a->start_ns;
        const bool a_in_b = b->start_ns <= a->start_ns && a->end_ns <= b->end_ns;
        const bool b_in_a = a->start_ns <= b->start_ns && b->end_ns <= a->end_ns;
        if (!(apart || a_in_b || b_in_a)) FAIL_CHECK(a->name << " and " << b->name << " overlap in part");
      }
    }
  }
}

Tensor uniform_leaf(const Shape& shape, uint64_t seed) {
  Generator gen(seed);
  return uniform(shape, -1, 1, gen, Dtype::float64).set_requires_grad(true);
}

}  // namespace

TEST_CASE("the profiler times each op forward and each rule backward, with a product's bytes and FLOPs") {
  const Tensor x = uniform_leaf({2, 3}, 1), w = uniform_leaf({3, 4}, 2);
  Profiler profiler;
  const Tensor loss = sum(tanh(matmul(x, w)));
  loss.backward();
  const Profile profile = profiler.stop();
  const std::vector<ProfileRow> rows = profile.rows();
  for (const char* op : {"matmul", "tanh", "sum"}) {
    INFO(op);
    REQUIRE(row_of(rows, op, "forward"));
    REQUIRE(row_of(rows, op, "backward"));
    CHECK(row_of(rows, op, "forward")->calls == 1);
    CHECK(row_of(rows, op, "backward")->kind == "rule");
  }
  const ProfileRow& product = *row_of(rows, "matmul", "forward");
  CHECK(product.flops == 2 * 2 * 4 * 3);
  CHECK(product.bytes == 8 * (6 + 12 + 8));  // float64: x, w, the output
  CHECK(row_of(rows, "tanh", "forward")->flops == -1);
  check_nested(profile.events());
  CHECK(profile.table().find("matmul") != std::string::npos);
  // The next profiler sees its own events only.
  Profiler next;
  (void)sum(x);
  CHECK(next.stop().events().size() == 1);
}

// Under bfloat16 products a feed-forward layer is one op, layer_norm_feedforward: its FLOPs are its
// two products', 2 rows (D D' + D' N).
TEST_CASE("the profiler counts layer_norm_feedforward's two products") {
  if (!axiom::test::bfloat16_products_here()) return;
  const axiom::test::PrecisionForTest bfloat16(core::MatmulPrecision::bfloat16);
  Generator gen(3);
  auto leaf = [&](const Shape& shape) { return uniform(shape, -1, 1, gen).set_requires_grad(true); };
  const Tensor x = leaf({2, 70, 80}), up = leaf({80, 96}), down = leaf({96, 64});
  Profiler profiler;
  (void)layer_norm_feedforward(x, {}, {}, 1e-5, up, {}, Activation::gelu, down, {});
  const std::vector<ProfileRow> rows = profiler.stop().rows();
  REQUIRE(row_of(rows, "layer_norm_feedforward", "forward"));
  CHECK(row_of(rows, "layer_norm_feedforward", "forward")->flops == 2 * 140 * (80 * 96 + 96 * 64));
}

TEST_CASE("a custom op is one row under its name, a range's own time is a row, a view moves no bytes") {
  static const CustomOp cube(
      "profiled_cube", [](const std::vector<Tensor>& in) { return mul(mul(in[0], in[0]), in[0]); },
      [](const BackwardContext& c) { return Grads{mul(mul(c.grad_output, c.inputs[0]), mul(c.inputs[0], 3.0))}; });
  const Tensor x = uniform_leaf({4}, 3);
  Profiler profiler;
  Tensor y;
  {
    const ProfileRange phase("my phase");
    y = cube({x});
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the range's own time
  }
  const Tensor view = y.reshape({2, 2});
  sum(view).backward();
  const Profile profile = profiler.stop();
  const std::vector<ProfileRow> rows = profile.rows();
  REQUIRE(row_of(rows, "profiled_cube", "forward"));
  REQUIRE(row_of(rows, "profiled_cube", "backward"));
  CHECK(!row_of(rows, "mul", "forward"));  // the custom op's own muls are inside its row
  REQUIRE(row_of(rows, "my phase", ""));
  CHECK(row_of(rows, "my phase", "")->seconds >= 0.019);
  CHECK(row_of(rows, "reshape", "forward")->bytes == 0);
  check_nested(profile.events());
}

TEST_CASE("the Chrome trace is valid JSON in the Trace Event Format") {
  const Tensor x = uniform_leaf({3}, 4);
  Profiler profiler;
  {
    const ProfileRange phase("say \"hi\"\n");
    sum(exp(x)).backward();
  }
  const Profile profile = profiler.stop();
  const nlohmann::json trace = nlohmann::json::parse(profile.chrome_trace());
  REQUIRE(trace["traceEvents"].is_array());
  CHECK(trace["traceEvents"].size() == profile.events().size());
  for (const auto& event : trace["traceEvents"]) {
    CHECK(event["ph"] == "X");
    CHECK(event["name"].is_string());
    CHECK(event["ts"].is_number());
    CHECK(event["dur"].get<double>() >= 0);
    CHECK(event["tid"].is_number_integer());
  }
  CHECK(trace["traceEvents"].back()["name"] == "say \"hi\"\n");  // the range ends last
}

TEST_CASE("on training steps of a tiny model, the rows add up to the steps' time, and events nest") {
  auto config = test::two_channel_config();
  models::TrainingOptions options;
  options.batch_size = 4, options.lr = 1e-2, options.seed = 7;
  Generator gen(99);
  const Tensor images(core::randint({8, config.channels, config.height, config.width}, 0, 256, gen, Dtype::uint8));
  models::Trainer trainer(config, options, images);
  trainer.step();  // the first step allocates what the others reuse
  Profiler profiler;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 3; ++i) trainer.step();
  const double steps_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const Profile profile = profiler.stop();
  double rows_seconds = 0;
  for (const ProfileRow& row : profile.rows()) rows_seconds += row.seconds;
  INFO(profile.table());
  CHECK(rows_seconds == doctest::Approx(steps_seconds).epsilon(0.10));
  for (const char* phase : {"data", "forward", "backward", "optimizer", "check"}) {
    const auto ranges = std::count_if(profile.events().begin(), profile.events().end(),
                                      [&](const ProfileEvent& e) { return e.kind == "range" && e.name == phase; });
    CHECK(ranges == 3);
  }
  CHECK(row_of(profile.rows(), "layer_norm_linear", "backward"));
  check_nested(profile.events());
}

TEST_CASE("one profiler at a time, stopped once") {
  Profiler first;
  CHECK(test::error_message([] { Profiler second; }) ==
        "[Profiler] a profiler is running already; stop it before starting another");
  (void)first.stop();
  CHECK(test::error_message([&] { (void)first.stop(); }) == "[Profiler] stop() was called already");
  Profiler again;  // after a stop, a new one may start
}
