// Everything in nn, for users who want one include.
#pragma once

#include "attention.h"
#include "blocks.h"
#include "gru.h"
#include "init.h"
#include "layers.h"
#include "local.h"
#include "lstm.h"
#include "module.h"
#include "multi_head_attention.h"
#include "position.h"
#include "relative.h"
