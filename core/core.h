// Everything in axiom::core, for users who want one include.
#pragma once

#include "core/backend.h"
#include "core/communicator.h"
#include "core/device.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/factory.h"
#include "core/ops.h"
#include "core/parallel.h"
#include "core/random.h"
#include "core/safetensors.h"
#include "core/shape.h"
#include "core/tensor.h"
