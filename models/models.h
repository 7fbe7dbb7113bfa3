// Everything in models, for users who want one include.
#pragma once

#include "axial_transformer.h"
#include "classifiers.h"
#include "config.h"
#include "training/cost.h"
#include "training/early_stopping.h"
#include "training/lr_find.h"
#include "image_model.h"
#include "learner.h"
#include "training/memory_budget.h"
#include "model_config.h"
#include "raster_transformer.h"
#include "sampler.h"
#include "training/training.h"
#include "translators.h"
