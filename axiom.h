// Everything axiom offers a program, in one include: #include <axiom/axiom.h>
//
//   axiom::Tensor, its ops and factories, backward(), grad(), vjp / jvp / hvp,
//   gradcheck / gradgradcheck                               autograd/
//   the devices, dtypes, shapes, errors and generators      core/
//   layers up to the Axial Transformer's blocks             nn/
//   SGD, Adam, AdamW, schedules, clipping, data parallelism optim/
//   the dataset readers and the batch loader                data/
//   the Axial Transformer, its samplers and its trainer     models/
//
// Installed, this file is include/axiom/axiom.h and the layers' headers sit beside it
// (include/axiom/core/tensor.h, ...); they include each other by relative paths, so only the
// prefix's include/ is on a program's include path. Only the headers reached from here are
// installed: the CPU and CUDA backends, the kernels and the rule helpers stay inside.
#pragma once

#include "autograd/autograd.h"
#include "core/core.h"
#include "core/distributed/communicator.h"
#include "core/formats/safetensors.h"
#include "data/cifar.h"
#include "data/datasets.h"
#include "data/idx.h"
#include "data/image_dataset.h"
#include "data/loader.h"
#include "data/npy.h"
#include "data/video.h"
#include "models/models.h"
#include "nn/nn.h"
#include "optim/optim.h"
