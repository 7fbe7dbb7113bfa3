// Everything in autograd, for users who want one include.
#pragma once

#include "checkpoint.h"
#include "custom_op.h"
#include "factory.h"
#include "functional.h"
#include "gradcheck.h"
#include "graph.h"
#include "profiler.h"
#include "ops.h"
#include "tensor.h"
