// Module: dotted names, counts, modes, dtype moves, state round trips and their errors.
#include <filesystem>

#include "nn/nn.h"
#include "tests/support/gradients.h"
#include "autograd/internal.h"

using namespace axiom;

namespace {
struct Tiny : nn::Module {
  explicit Tiny(Generator& gen)
      : blocks(register_module("blocks", std::make_shared<nn::ModuleList<nn::TransformerBlock>>())),
        head(register_module("head", std::make_shared<nn::Dense>(4, 3, gen))),
        drop(register_module("drop", std::make_shared<nn::Dropout>(0.5))) {
    for (int i = 0; i < 2; ++i)
      blocks->push_back(
          std::make_shared<nn::TransformerBlock>(4, 1, gen, nn::BlockOptions{.heads = 2, .ff_multiple = 1}));
  }
  std::shared_ptr<nn::ModuleList<nn::TransformerBlock>> blocks;
  std::shared_ptr<nn::Dense> head;
  std::shared_ptr<nn::Dropout> drop;
};
}  // namespace

TEST_CASE("parameters have dotted hierarchical names in registration order") {
  Generator gen(1);
  Tiny tiny(gen);
  const nn::NamedParameters named = tiny.named_parameters();
  REQUIRE(named.size() == 2 * 12 + 2);
  CHECK(named.front().first == "blocks.0.attention.norm.weight");
  CHECK(named[2].first == "blocks.0.attention.attention.qkv.weight");
  CHECK(named[11].first == "blocks.0.feedforward.down.bias");
  CHECK(named[12].first == "blocks.1.attention.norm.weight");
  CHECK(named.back().first == "head.bias");
  // per block: 2 norms (4+4 each), qkv 4*12+12, out 4*4+4, up 4*4+4, down 4*4+4
  CHECK(tiny.parameter_count() == 2 * (16 + 60 + 20 + 20 + 20) + (12 + 3));
  for (const auto& [name, p] : named) CHECK(p.requires_grad());
}

TEST_CASE("the same seed gives the same model") {
  Generator a(5), b(5), c(6);
  Tiny one(a), two(b), three(c);
  CHECK(core::sum(core::ne(core_tensor(one.head->weight), core_tensor(two.head->weight))).item() == 0);
  CHECK(core::sum(core::ne(core_tensor(one.head->weight), core_tensor(three.head->weight))).item() > 0);
}

TEST_CASE("train and eval reach every submodule") {
  Generator gen(2);
  Tiny tiny(gen);
  tiny.eval();
  CHECK_FALSE(tiny.drop->is_training());
  CHECK_FALSE(tiny.blocks->operator[](1).feedforward->is_training());
  tiny.train();
  CHECK(tiny.drop->is_training());
}

TEST_CASE("registering a name twice or a dotted name or an undefined or differentiable value is an error") {
  struct Bad : nn::Module {
    void twice() {
      register_parameter("w", axiom::zeros({1}));
      register_parameter("w", axiom::zeros({1}));
    }
    void dotted() { register_parameter("a.b", axiom::zeros({1})); }
    void undefined() { register_parameter("u", Tensor()); }
    Tensor tied(const Tensor& other) { return register_parameter("t", other); }
  };
  Bad bad;
  CHECK_THROWS_WITH_AS(bad.twice(), doctest::Contains("registered twice"), Error);
  CHECK_THROWS_AS(bad.dotted(), Error);
  CHECK_THROWS_WITH_AS(bad.undefined(), "[Module] parameter 'u' is an undefined tensor", Error);
  const Tensor other = axiom::zeros({2}).set_requires_grad(true);  // another module's parameter, say
  CHECK_THROWS_WITH_AS(bad.tied(other), doctest::Contains("parameter 't' is given a tensor that requires a gradient"),
                       Error);
  CHECK(core_tensor(bad.tied(other.detach())).storage() == core_tensor(other).storage());  // shared on purpose
}

TEST_CASE("state round trip, to(dtype), and load_state errors name the entries") {
  Generator g1(3), g2(4);
  Tiny source(g1), target(g2);
  target.load_state(source.state());
  for (size_t i = 0; i < source.parameters().size(); ++i) {
    CHECK(core::sum(core::ne(core_tensor(source.parameters()[i]), core_tensor(target.parameters()[i]))).item() == 0);
  }
  nn::StateDict state = source.state();
  state.pop_back();                                    // head.bias missing
  state.emplace_back("head.extra", core::zeros({3}));  // unexpected
  state[0].second = axiom::zeros({5});                 // wrong shape
  const std::string message = axiom::test::error_message([&] { target.load_state(state); });
  CHECK(message.find("missing 'head.bias'") != std::string::npos);
  CHECK(message.find("unexpected 'head.extra'") != std::string::npos);
  CHECK(message.find("'blocks.0.attention.norm.weight' is float32 [5]") != std::string::npos);

  target.to(Dtype::float64);
  CHECK(target.head->weight.dtype() == Dtype::float64);
  CHECK(target.named_parameters()[0].second.dtype() == Dtype::float64);
}

TEST_CASE("save and load through a safetensors file") {
  Generator g1(7), g2(8);
  Tiny source(g1), target(g2);
  const std::string path = (std::filesystem::temp_directory_path() / "axiom_nn_module_test.safetensors").string();
  source.save(path);
  target.load(path);
  CHECK(core::sum(core::ne(core_tensor(source.head->weight), core_tensor(target.head->weight))).item() == 0);
  std::filesystem::remove(path);
  CHECK_THROWS_WITH_AS(target.load(path), doctest::Contains("axiom_nn_module_test"), Error);
}
