// Configs: presets, JSON files, and errors that name the bad key and value.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "models/config.h"
#include "tests/support/reference.h"

using namespace axiom;

TEST_CASE("presets have the sizes the issue gives") {
  const models::ImageModelConfig tiny = models::preset("tiny"), small = models::preset("small"),
                                 medium = models::preset("medium");
  CHECK((tiny.features == 64 && tiny.heads == 4 && tiny.upper_layers == 2 && tiny.row_layers == 2));
  CHECK((small.features == 128 && small.heads == 4 && small.upper_layers == 4 && small.row_layers == 4));
  CHECK((medium.features == 256 && medium.heads == 8 && medium.upper_layers == 8 && medium.row_layers == 4));
  CHECK((tiny.height == 28 && tiny.width == 28 && tiny.ff_multiple == 4));
  CHECK_THROWS_WITH_AS(models::preset("huge"), doctest::Contains("unknown preset \"huge\""), Error);
}

TEST_CASE(
    "init, positions and relative round-trip, and a config without them (written before they existed) keeps the "
    "original model") {
  models::ImageModelConfig c = models::preset("tiny");
  c.init = models::Init::authors, c.positions = models::Positions::shared, c.relative = 5;
  const models::ImageModelConfig back = models::config_from_json(c.to_json(), "test");
  CHECK((back.init == models::Init::authors && back.positions == models::Positions::shared && back.relative == 5));
  const models::ImageModelConfig old = models::config_from_json(R"({"features": 64, "heads": 4})", "old.json");
  CHECK((old.init == models::Init::pytorch && old.positions == models::Positions::separate && old.relative == 0));
  CHECK_THROWS_WITH_AS(models::config_from_json(R"({"relative": -1})", "a.json"),
                       doctest::Contains("relative must be in [0, 65536], got -1"), Error);
}

TEST_CASE("the comparison's presets are small with another decoder, and attention's keys are checked") {
  for (const std::string name : {"small-full", "small-local1d", "small-local2d", "small-relative"}) {
    CAPTURE(name);
    const models::ImageModelConfig c = models::load_config(name);
    CHECK((c.features == 128 && c.heads == 4 && c.upper_layers == 4 && c.row_layers == 4 && c.ff_multiple == 4));
    CHECK(models::name_of(c.attention) == (name == "small-relative" ? "axial" : name.substr(6)));
    CHECK(c.relative == (name == "small-relative" ? 16 : 0));
  }
  CHECK((models::preset("small").local_length == 112 && models::preset("small").local_rows == 7));
  models::ImageModelConfig c = models::preset("tiny");
  c.attention = models::Attention::local2d, c.local_rows = 4, c.local_columns = 14, c.local_length = 56;
  const models::ImageModelConfig back = models::config_from_json(c.to_json(), "test");
  CHECK((back.attention == models::Attention::local2d && back.local_rows == 4 && back.local_columns == 14 &&
         back.local_length == 56));
  CHECK(models::config_from_json(R"({"features": 64, "heads": 4})", "old.json").attention == models::Attention::axial);
  CHECK(c.to_json().find(R"("attention": "local2d")") != std::string::npos);  // written by its name
  CHECK_THROWS_WITH_AS(
      models::config_from_json(R"({"attention": "sparse"})", "a.json"),
      doctest::Contains("attention must be \"axial\", \"full\", \"local1d\" or \"local2d\", got \"sparse\""), Error);
  CHECK_THROWS_WITH_AS(models::config_from_json(R"({"attention": "full", "inner": "lstm"})", "a.json"),
                       doctest::Contains("inner \"lstm\" is a part of the axial decoder"), Error);
  CHECK_THROWS_WITH_AS(models::config_from_json(R"({"attention": "local1d", "relative": 4})", "a.json"),
                       doctest::Contains("relative positions are for axial attention"), Error);
  CHECK_THROWS_WITH_AS(models::config_from_json(R"({"local_length": 0})", "a.json"),
                       doctest::Contains("local_length must be in [1, "), Error);
  CHECK_THROWS_WITH_AS(models::config_from_json(R"({"local_rows": 70000})", "a.json"),
                       doctest::Contains("local_rows must be in [1, 65536], got 70000"), Error);
  CHECK_THROWS_WITH_AS(models::config_from_json(R"({"local_columns": -3})", "a.json"),
                       doctest::Contains("local_columns must be in [1, 65536], got -3"), Error);
  CHECK_THROWS_WITH_AS(models::preset("small-sparse"),
                       doctest::Contains("small-local2d, small-relative, or a JSON file"), Error);
}

TEST_CASE("a JSON config round-trips and bad keys or values are named") {
  models::ImageModelConfig c = models::preset("small");
  c.channels = 3, c.inner = models::Inner::lstm;
  const models::ImageModelConfig back = models::config_from_json(c.to_json(), "test");
  CHECK((back.channels == 3 && back.inner == models::Inner::lstm && back.features == 128));
  CHECK_THROWS_WITH_AS(models::config_from_json(R"({"featurs": 64})", "a.json"),
                       doctest::Contains("unknown key \"featurs\""), Error);
  CHECK_THROWS_WITH_AS(models::config_from_json(R"({"features": "64"})", "a.json"),
                       doctest::Contains("features must be an integer"), Error);
  CHECK_THROWS_WITH_AS(models::config_from_json(R"({"features": 66, "heads": 4})", "a.json"),
                       doctest::Contains("multiple of heads"), Error);
  CHECK_THROWS_WITH_AS(models::config_from_json(R"({"upper_layers": 3})", "a.json"), doctest::Contains("upper_layers"),
                       Error);
  CHECK_THROWS_WITH_AS(models::config_from_json(R"({"inner": "gru"})", "a.json"), doctest::Contains("\"gru\""), Error);
  CHECK_THROWS_WITH_AS(models::config_from_json(R"({"init": "xavier"})", "a.json"),
                       doctest::Contains("init must be \"pytorch\" or \"authors\", got \"xavier\""), Error);
  CHECK_THROWS_WITH_AS(models::config_from_json(R"({"positions": "tied"})", "a.json"),
                       doctest::Contains("positions must be \"separate\" or \"shared\", got \"tied\""), Error);
  CHECK_THROWS_WITH_AS(models::config_from_json("{", "a.json"), doctest::Contains("not valid JSON"), Error);
  CHECK_THROWS_WITH_AS(models::load_config("/no/such/config.json"), doctest::Contains("/no/such/config.json"), Error);
}

TEST_CASE("configs are read strictly: duplicate keys, absurd sizes, and files that are not regular or too large") {
  CHECK_THROWS_WITH_AS(
      models::config_from_json(R"({"features": 64, "features": 32})", "a.json"),
      doctest::Contains("[config] a.json: not valid JSON: the key 'features' appears twice in one object"), Error);
  CHECK_THROWS_WITH_AS(models::config_from_json(R"({"upper_layers": 1099511627776})", "a.json"),
                       doctest::Contains("upper_layers must be in [0, 100000], got 1099511627776"), Error);
  CHECK_THROWS_WITH_AS(
      models::config_from_json(R"({"height": 18446744073709551615})", "a.json"),  // beyond int64: not wrapped to -1
      doctest::Contains("height is far beyond its range, got 18446744073709551615"), Error);
  CHECK_THROWS_WITH_AS(models::config_from_json(R"({"features": 64, "heads": 128})", "a.json"),
                       doctest::Contains("heads must be in [1, 64], got 128"), Error);
  CHECK_THROWS_WITH_AS(models::load_config("/dev/zero"), doctest::Contains("'/dev/zero' is not a regular file"), Error);
  CHECK_THROWS_WITH_AS(models::load_config("/tmp"), doctest::Contains("'/tmp' is not a regular file"), Error);
  const std::string fifo = "/tmp/axiom_config_fifo_" + std::to_string(::getpid());
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH_AS(models::load_config(fifo), doctest::Contains("is not a regular file"),
                       Error);  // no wait for a writer
  ::unlink(fifo.c_str());
  const std::string big = "/tmp/axiom_config_big_" + std::to_string(::getpid()) + ".json";
  std::ofstream(big) << "{" << std::string(2 << 20, ' ') << "}";
  CHECK_THROWS_WITH_AS(models::load_config(big), doctest::Contains("has 2097154 bytes; a config has at most 1048576"),
                       Error);
  std::remove(big.c_str());
}
