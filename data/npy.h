// NPY and NPZ: NumPy's array files (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html).
//
// NPY, versions 1.0, 2.0 and 3.0:
//   bytes 0-5    "\x93NUMPY"
//   bytes 6-7    version major, minor
//   2 or 4 bytes header length H, little-endian (2 bytes in version 1, 4 in versions 2 and 3)
//   H bytes      a Python dict literal, space-padded, ending in '\n':
//                {'descr': '|u1', 'fortran_order': False, 'shape': (2, 3), }
//   ...          the elements, row-major
// dtypes read: '|u1' (uint8; also '<u1', '>u1'), '<f4' (float32), '<f8' (float64), '<i8' (int64).
// fortran_order True, big-endian multi-byte dtypes, object arrays and structured dtypes are
// errors. The data must fill the rest of the file exactly.
//
// NPZ: a zip archive of NPY files (numpy.savez / savez_compressed), members stored or deflated,
// zip64 understood, read with libzip (which checks the directory against the local headers, and
// each member's size and CRC-32). Each member "name.npy" becomes the key "name". Every member's
// declared size is checked against what its compressed bytes can expand to, and against its NPY
// header, before any allocation.
//
// Errors name the file (and member), the field and the byte offset:
//   [npy] 'x.npy': bad header at byte 36: fortran_order True is not supported (only C order)
#pragma once

#include <map>
#include <string>

#include "../autograd/tensor.h"

namespace axiom::data {

Tensor read_npy(const std::string& path);
std::map<std::string, Tensor> read_npz(const std::string& path);

// Writes a uint8, float32, float64 or int64 tensor (any strides) as NPY version 1.0, atomically: to
// a temporary file beside `path`, flushed, then renamed over it.
void write_npy(const std::string& path, const Tensor& tensor);

}  // namespace axiom::data
