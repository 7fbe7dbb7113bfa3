// Everything in nn, for users who want one include.
#pragma once

#include "nn/attention.h"
#include "nn/blocks.h"
#include "nn/gru.h"
#include "nn/init.h"
#include "nn/layers.h"
#include "nn/local.h"
#include "nn/lstm.h"
#include "nn/module.h"
#include "nn/position.h"
#include "nn/relative.h"
