// Everything in axiom::optim, for users who want one include.
#pragma once

#include "adam.h"
#include "clip.h"
#include "data_parallel.h"
#include "optimizer.h"
#include "schedule.h"
#include "sgd.h"
