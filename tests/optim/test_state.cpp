// Optimizer state: what state() holds (tensor names, JSON), save/load round trips through a
// safetensors file, a resumed run that continues bit for bit like an uninterrupted one (SGD, Adam,
// AdamW, float32 and float64, with a schedule and a parameter that skips steps), and every load
// error, after which the optimizer is as it was.
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>

#include "tests/support/optimizers.h"
#include "autograd/internal.h"

using namespace axiom;
using namespace axiom::test;
using nlohmann::json;
using test::check_error;

namespace {

using Factory = std::function<std::unique_ptr<optim::Optimizer>(const optim::NamedParameters&, bool other)>;

// The three optimizers, each made with its real hyperparameters, or (other = true) with different
// ones that a load must overwrite.
const std::vector<std::pair<const char*, Factory>> kFactories = {
    {"SGD",
     [](const optim::NamedParameters& p, bool other) -> std::unique_ptr<optim::Optimizer> {
       if (other) return std::make_unique<optim::SGD>(p, optim::SGDOptions{.lr = 9, .momentum = 0.1});
       return std::make_unique<optim::SGD>(
           p, optim::SGDOptions{.lr = 0.05, .momentum = 0.9, .weight_decay = 0.01, .nesterov = true});
     }},
    {"Adam",
     [](const optim::NamedParameters& p, bool other) -> std::unique_ptr<optim::Optimizer> {
       if (other) return std::make_unique<optim::Adam>(p, optim::AdamOptions{.lr = 9, .betas = {0.5, 0.5}, .eps = 1});
       return std::make_unique<optim::Adam>(p,
                                            optim::AdamOptions{.lr = 0.1, .betas = {0.8, 0.99}, .weight_decay = 0.1});
     }},
    {"AdamW",
     [](const optim::NamedParameters& p, bool other) -> std::unique_ptr<optim::Optimizer> {
       if (other) return std::make_unique<optim::AdamW>(p, optim::AdamWOptions{.lr = 9, .weight_decay = 0});
       return std::make_unique<optim::AdamW>(p, optim::AdamWOptions{.lr = 0.1, .weight_decay = 0.2});
     }},
};

// Training step `k` of the resume test: the lr from a warmup + cosine schedule, and a loss that
// leaves b out of every third step (so w and b have different step counts).
void scheduled_step(optim::Optimizer& opt, int64_t k) {
  static const optim::Schedule schedule = optim::Schedule::cosine(1.0, {.steps = 3}, 10, 0.1);
  opt.set_lr(schedule.lr(k) * 0.1);
  opt.zero_grad();
  const optim::NamedParameters& params = opt.parameters();
  if (k % 3 == 2) {
    sum(mul(params[0].second, params[0].second)).backward();
  } else {
    loss_of(params).backward();
  }
  opt.step();
}

// An Adam optimizer over the problem after two steps, and its state.
struct Stepped {
  optim::NamedParameters params = make_parameters(Dtype::float64);
  optim::Adam opt{params, {.lr = 0.1}};
  Stepped() {
    train_step(opt);
    train_step(opt);
  }
};

// Checks that `opt` is exactly as `before` (its state) says.
void check_unchanged(const optim::Optimizer& opt, const optim::OptimizerState& before,
                     std::source_location where = std::source_location::current()) {
  const optim::OptimizerState now = opt.state();
  if (now.json != before.json) ADD_FAIL_CHECK_AT(where.file_name(), static_cast<int>(where.line()), "the JSON changed");
  REQUIRE(now.tensors.size() == before.tensors.size());
  for (size_t i = 0; i < now.tensors.size(); ++i) {
    CHECK(now.tensors[i].first == before.tensors[i].first);
    CHECK(test::values_of(now.tensors[i].second) == test::values_of(before.tensors[i].second));
  }
}

}  // namespace

TEST_CASE("state() names each buffer <buffer>.<parameter> and describes the rest in JSON") {
  Stepped s;
  const optim::OptimizerState state = s.opt.state();
  std::vector<std::string> names;
  for (const auto& [name, tensor] : state.tensors) names.push_back(name);
  CHECK(names == std::vector<std::string>{"exp_avg.w", "exp_avg_sq.w", "exp_avg.b", "exp_avg_sq.b"});
  CHECK(test::values_of(state.tensors[0].second) ==
        test::values_of(core_tensor(s.opt.state_of("w").buffers.at("exp_avg"))));
  CHECK(state.tensors[0].second.storage() !=
        core_tensor(s.opt.state_of("w").buffers.at("exp_avg")).storage());  // a copy: steps update in place
  const json doc = json::parse(state.json);
  CHECK(doc.at("type") == "Adam");
  CHECK(doc.at("version") == 1);
  CHECK(doc.at("hyperparameters").at("lr") == 0.1);
  CHECK(doc.at("hyperparameters").at("beta1") == 0.9);
  CHECK(doc.at("hyperparameters").at("beta2") == 0.999);
  CHECK(doc.at("hyperparameters").at("eps") == 1e-8);
  CHECK(doc.at("hyperparameters").at("weight_decay") == 0);
  CHECK(doc.at("parameters").size() == 2);
  CHECK(doc.at("parameters")[1].at("name") == "b");
  CHECK(doc.at("parameters")[1].at("shape") == json::array({2, 2}));
  CHECK(doc.at("parameters")[1].at("dtype") == "float64");
  CHECK(doc.at("parameters")[1].at("step") == 2);
  // SGD without momentum keeps no tensors; with momentum, one buffer per parameter.
  optim::NamedParameters params = make_parameters(Dtype::float32);
  optim::SGD plain(params, {.lr = 0.1});
  train_step(plain);
  CHECK(plain.state().tensors.empty());
  CHECK(json::parse(plain.state().json).at("parameters")[0].at("step") == 1);
  optim::SGD momentum(params, {.lr = 0.1, .momentum = 0.9});
  train_step(momentum);
  CHECK(momentum.state().tensors.size() == 2);
  CHECK(momentum.state().tensors[1].first == "momentum_buffer.b");
}

TEST_CASE("the state is a snapshot: later steps do not change what state() returned") {
  Stepped s;
  const optim::OptimizerState before = s.opt.state();
  const std::vector<double> m = test::values_of(before.tensors[0].second);
  train_step(s.opt);
  CHECK(test::values_of(before.tensors[0].second) == m);
  CHECK(test::values_of(core_tensor(s.opt.state_of("w").buffers.at("exp_avg"))) != m);
}

TEST_CASE("save and load round-trip the tensors, step counts and hyperparameters exactly") {
  for (const auto& [type, make] : kFactories) {
    CAPTURE(type);
    optim::NamedParameters params = make_parameters(Dtype::float32);
    auto opt = make(params, false);
    for (int k = 0; k < 3; ++k) scheduled_step(*opt, k);
    TempFile file(std::string(type) + "_roundtrip.safetensors");
    opt->save(file.str());
    auto loaded = make(make_parameters(Dtype::float32), /*other=*/true);
    loaded->load(file.str());
    const optim::OptimizerState a = opt->state(), b = loaded->state();
    CHECK(a.json == b.json);
    CHECK(loaded->lr() == opt->lr());
    REQUIRE(a.tensors.size() == b.tensors.size());
    for (size_t i = 0; i < a.tensors.size(); ++i) {
      CHECK(a.tensors[i].first == b.tensors[i].first);
      CHECK(b.tensors[i].second.dtype() == Dtype::float32);
      CHECK(test::values_of(a.tensors[i].second) == test::values_of(b.tensors[i].second));
    }
    // The file is plain safetensors with the JSON under "optimizer".
    const core::SafetensorsFile raw = core::load_safetensors(file.str());
    CHECK(raw.metadata.at("optimizer") == a.json);
  }
}

TEST_CASE("a resumed run continues exactly: N steps, save, load, N steps == 2N steps") {
  constexpr int N = 4;
  for (Dtype dtype : {Dtype::float32, Dtype::float64}) {
    for (const auto& [type, make] : kFactories) {
      CAPTURE(dtype);
      CAPTURE(type);
      // Straight through.
      optim::NamedParameters straight = make_parameters(dtype);
      auto a = make(straight, false);
      for (int k = 0; k < 2 * N; ++k) scheduled_step(*a, k);
      // Interrupted after N steps: the parameters' values (as a model checkpoint would hold them)
      // and the optimizer's file go to fresh objects, made with other hyperparameters.
      optim::NamedParameters first = make_parameters(dtype);
      auto b = make(first, false);
      for (int k = 0; k < N; ++k) scheduled_step(*b, k);
      TempFile file(std::string(type) + "_resume.safetensors");
      b->save(file.str());
      optim::NamedParameters resumed = make_parameters(dtype, values_of(first));
      auto c = make(resumed, /*other=*/true);
      c->load(file.str());
      for (int k = N; k < 2 * N; ++k) scheduled_step(*c, k);
      CHECK(values_of(resumed) == values_of(straight));  // bit for bit
      CHECK(c->state().json == a->state().json);
      // Without the optimizer's state the same resume drifts: the test can tell.
      optim::NamedParameters cold = make_parameters(dtype, values_of(first));
      auto d = make(cold, false);
      for (int k = N; k < 2 * N; ++k) scheduled_step(*d, k);
      CHECK(values_of(cold) != values_of(straight));
    }
  }
}

TEST_CASE("a float64 state loads into float32 parameters, converted") {
  Stepped s;
  optim::NamedParameters params32 = make_parameters(Dtype::float32);
  optim::Adam opt32(params32, {.lr = 0.1});
  opt32.load_state(s.opt.state());
  const core::Tensor& m = core_tensor(opt32.state_of("w").buffers.at("exp_avg"));
  CHECK(m.dtype() == Dtype::float32);
  test::check_close(m, test::values_of(core_tensor(s.opt.state_of("w").buffers.at("exp_avg"))), 1e-7, 0, "exp_avg.w");
  CHECK(opt32.state_of("b").step == 2);
}

TEST_CASE("load errors: missing, unexpected and mis-shaped tensors") {
  Stepped s;
  const optim::OptimizerState good = s.opt.state();
  optim::NamedParameters params = make_parameters(Dtype::float64);
  optim::Adam opt(params, {.lr = 0.5});
  train_step(opt);
  const optim::OptimizerState before = opt.state();

  optim::OptimizerState missing = good;
  missing.tensors.erase(missing.tensors.begin() + 3);  // exp_avg_sq.b
  check_error([&] { opt.load_state(missing); }, {"[Adam]", "tensor 'exp_avg_sq.b' is missing"});

  optim::OptimizerState unexpected = good;
  unexpected.tensors.emplace_back("momentum_buffer.w", core::zeros({3}, Dtype::float64));
  check_error([&] { opt.load_state(unexpected); }, {"[Adam]", "unexpected tensor 'momentum_buffer.w'"});
  unexpected = good;
  unexpected.tensors.emplace_back("exp_avg.c", core::zeros({3}, Dtype::float64));
  check_error([&] { opt.load_state(unexpected); }, {"[Adam]", "unexpected tensor 'exp_avg.c'"});
  unexpected = good;
  unexpected.tensors.emplace_back("exp_avg", core::zeros({3}, Dtype::float64));
  check_error([&] { opt.load_state(unexpected); }, {"[Adam]", "unexpected tensor 'exp_avg'"});
  unexpected = good;
  unexpected.tensors.push_back(good.tensors[0]);
  check_error([&] { opt.load_state(unexpected); }, {"[Adam]", "'exp_avg.w' appears twice"});

  optim::OptimizerState shape = good;
  shape.tensors[0].second = core::zeros({4}, Dtype::float64);
  check_error([&] { opt.load_state(shape); }, {"[Adam]", "tensor 'exp_avg.w'", "shape [4]", "[3]"});
  optim::OptimizerState dtype = good;
  dtype.tensors[0].second = core::zeros({3}, Dtype::int64);
  check_error([&] { opt.load_state(dtype); }, {"[Adam]", "tensor 'exp_avg.w'", "int64"});

  // A parameter with step 0 has no buffers.
  optim::OptimizerState stepless = good;
  json doc = json::parse(good.json);
  doc["parameters"][0]["step"] = 0;
  stepless.json = doc.dump();
  check_error([&] { opt.load_state(stepless); }, {"[Adam]", "unexpected tensor 'exp_avg.w'", "step 0"});
  check_unchanged(opt, before);
  CHECK(opt.lr() == 0.5);
}

TEST_CASE("load errors: parameters missing, unexpected or of another shape") {
  Stepped s;
  const optim::OptimizerState good = s.opt.state();
  // The optimizer has a parameter c that the state lacks.
  optim::NamedParameters more = make_parameters(Dtype::float64);
  more.emplace_back("c", Tensor(core::zeros({1}, Dtype::float64), true));
  optim::Adam with_c(more);
  check_error([&] { with_c.load_state(good, "'ckpt.safetensors'"); },
              {"[Adam]", "'ckpt.safetensors'", "parameter 'c' is missing"});
  // The state has a parameter b that the optimizer lacks.
  optim::NamedParameters fewer = make_parameters(Dtype::float64);
  fewer.pop_back();
  optim::Adam without_b(fewer);
  check_error([&] { without_b.load_state(good); }, {"[Adam]", "unexpected parameter 'b'"});
  // The same names, another shape.
  optim::NamedParameters other = make_parameters(Dtype::float64);
  other[0].second = Tensor(core::zeros({4}, Dtype::float64), true);
  optim::Adam reshaped(other);
  check_error([&] { reshaped.load_state(good); }, {"[Adam]", "parameter 'w' has shape [3] there but [4] here"});
}

TEST_CASE("load errors: another optimizer's state, a bad or missing JSON, bad hyperparameters") {
  Stepped s;
  const optim::OptimizerState good = s.opt.state();
  optim::NamedParameters params = make_parameters(Dtype::float64);
  optim::SGD sgd(params, {.lr = 0.1, .momentum = 0.9});
  check_error([&] { sgd.load_state(good); }, {"[SGD]", "holds Adam state, not SGD state"});
  optim::AdamW adamw(params);
  check_error([&] { adamw.load_state(good); }, {"[AdamW]", "holds Adam state, not AdamW state"});
  optim::Adam adam(params, {.lr = 0.5});
  train_step(adam);
  const optim::OptimizerState before = adam.state();
  check_error([&] { adam.load_state(sgd.state()); }, {"[Adam]", "holds SGD state, not Adam state"});

  auto with_json = [&](const std::function<void(json&)>& edit) {
    optim::OptimizerState state = good;
    json doc = json::parse(good.json);
    edit(doc);
    state.json = doc.dump();
    return state;
  };
  check_error([&] { adam.load_state({good.tensors, "{not json"}); }, {"[Adam]", "not valid JSON"});
  check_error([&] { adam.load_state(with_json([](json& d) { d["version"] = 7; })); },
              {"[Adam]", "not an axiom optimizer state"});
  check_error([&] { adam.load_state(with_json([](json& d) { d.erase("parameters"); })); },
              {"[Adam]", "malformed", "parameters"});
  check_error([&] { adam.load_state(with_json([](json& d) { d["parameters"][0]["shape"] = "big"; })); },
              {"[Adam]", "malformed"});
  // Numbers that are not integers where integers go (found by fuzz_optimizer_state: converting 1e38 to int64 is
  // undefined).
  check_error([&] { adam.load_state(with_json([](json& d) { d["parameters"][0]["shape"] = json::array({1e38}); })); },
              {"[Adam]", "malformed optimizer state (the shape of 'w' is [1e+38], not an array of integers)"});
  check_error([&] { adam.load_state(with_json([](json& d) { d["parameters"][0]["step"] = 1.5; })); },
              {"[Adam]", "malformed optimizer state (the step of 'w' is 1.5, not an integer)"});
  check_error([&] { adam.load_state(with_json([](json& d) { d["hyperparameters"].erase("eps"); })); },
              {"[Adam]", "hyperparameter 'eps' is missing"});
  check_error([&] { adam.load_state(with_json([](json& d) { d["hyperparameters"]["momentum"] = 0.9; })); },
              {"[Adam]", "unexpected hyperparameter 'momentum'"});
  check_error([&] { adam.load_state(with_json([](json& d) { d["hyperparameters"]["beta1"] = 1.5; })); },
              {"[Adam]", "beta1", "1.5"});
  check_error([&] { adam.load_state(with_json([](json& d) { d["hyperparameters"]["lr"] = -1; })); },
              {"[Adam]", "lr", "-1"});
  check_error([&] { adam.load_state(with_json([](json& d) { d["parameters"][1]["step"] = -2; })); },
              {"[Adam]", "'b'", "step -2"});
  check_error([&] { adam.load_state(with_json([](json& d) { d["parameters"].push_back(d["parameters"][0]); })); },
              {"[Adam]", "'w' is listed twice"});
  check_unchanged(adam, before);
  CHECK(adam.lr() == 0.5);
}

TEST_CASE("load errors from files: no optimizer metadata, no file") {
  optim::NamedParameters params = make_parameters(Dtype::float64);
  optim::Adam adam(params);
  TempFile weights("weights.safetensors");
  core::save_safetensors(weights.str(), {{"w", core::zeros({3})}});
  check_error([&] { adam.load(weights.str()); }, {"[Adam]", weights.str(), "no \"optimizer\" key"});
  TempFile absent("absent.safetensors");
  CHECK_FALSE(test::error_message([&] { adam.load(absent.str()); }).empty());
}
