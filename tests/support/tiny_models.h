// Model configs small enough for a test to train in milliseconds, shared by the suites.
#pragma once

#include "models/config.h"

namespace axiom::test {

// 3 x 4 images of two channels (each step draws a channel per example) with dropout (it draws masks
// too): every kind of random number a training step takes, which a checkpoint must restore and a
// split batch must not change.
inline models::ImageModelConfig two_channel_config() {
  models::ImageModelConfig c;
  c.height = 3, c.width = 4, c.channels = 2, c.features = 8, c.heads = 2;
  c.upper_layers = 2, c.row_layers = 1, c.encoder_layers = 1, c.ff_multiple = 2, c.dropout = 0.1;
  return c;
}

}  // namespace axiom::test
