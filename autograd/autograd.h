// Everything in autograd, for users who want one include.
#pragma once

#include "autograd/checkpoint.h"
#include "autograd/factory.h"
#include "autograd/functional.h"
#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "autograd/tensor.h"
