// Everything in axiom::core, for users who want one include.
#pragma once

#include "backend.h"
#include "device.h"
#include "dtype.h"
#include "error.h"
#include "factory.h"
#include "matmul_precision.h"
#include "parallel.h"
#include "random.h"
#include "meta/meta.h"
#include "shape.h"
#include "tensor.h"
