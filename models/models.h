// Everything in models, for users who want one include.
#pragma once

#include "axial_transformer.h"
#include "classifiers.h"
#include "config.h"
#include "memory_budget.h"
#include "sampler.h"
#include "training.h"
