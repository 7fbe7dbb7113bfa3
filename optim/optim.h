// Everything in axiom::optim, for users who want one include.
#pragma once

#include "optim/adam.h"
#include "optim/clip.h"
#include "optim/data_parallel.h"
#include "optim/optimizer.h"
#include "optim/schedule.h"
#include "optim/sgd.h"
