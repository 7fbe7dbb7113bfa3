// Configs: presets, JSON files, and errors that name the bad key and value.
#include "models/config.h"
#include "tests/core/reference.h"

using namespace axiom;

TEST_CASE("presets have the sizes the issue gives") {
  const models::AxialTransformerConfig tiny = models::preset("tiny"), small = models::preset("small"),
                                       medium = models::preset("medium");
  CHECK((tiny.features == 64 && tiny.heads == 4 && tiny.upper_layers == 2 && tiny.row_layers == 2));
  CHECK((small.features == 128 && small.heads == 4 && small.upper_layers == 4 && small.row_layers == 4));
  CHECK((medium.features == 256 && medium.heads == 8 && medium.upper_layers == 8 && medium.row_layers == 4));
  CHECK((tiny.height == 28 && tiny.width == 28 && tiny.ff_multiple == 4));
  CHECK_THROWS_WITH_AS(models::preset("huge"), doctest::Contains("unknown preset \"huge\""), Error);
}

TEST_CASE("a JSON config round-trips and bad keys or values are named") {
  models::AxialTransformerConfig c = models::preset("small");
  c.channels = 3, c.inner = "lstm";
  const models::AxialTransformerConfig back = models::config_from_json(c.to_json(), "test");
  CHECK((back.channels == 3 && back.inner == "lstm" && back.features == 128));
  CHECK_THROWS_WITH_AS(models::config_from_json(R"({"featurs": 64})", "a.json"), doctest::Contains("unknown key \"featurs\""), Error);
  CHECK_THROWS_WITH_AS(models::config_from_json(R"({"features": "64"})", "a.json"), doctest::Contains("features must be an integer"), Error);
  CHECK_THROWS_WITH_AS(models::config_from_json(R"({"features": 66, "heads": 4})", "a.json"), doctest::Contains("multiple of heads"), Error);
  CHECK_THROWS_WITH_AS(models::config_from_json(R"({"upper_layers": 3})", "a.json"), doctest::Contains("upper_layers"), Error);
  CHECK_THROWS_WITH_AS(models::config_from_json(R"({"inner": "gru"})", "a.json"), doctest::Contains("\"gru\""), Error);
  CHECK_THROWS_WITH_AS(models::config_from_json("{", "a.json"), doctest::Contains("not valid JSON"), Error);
  CHECK_THROWS_WITH_AS(models::load_config("/no/such/config.json"), doctest::Contains("/no/such/config.json"), Error);
}
