// Everything in models, for users who want one include.
#pragma once

#include "models/axial_transformer.h"
#include "models/classifiers.h"
#include "models/config.h"
#include "models/memory_budget.h"
#include "models/sampler.h"
#include "models/training.h"
