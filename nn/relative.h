// Relative position logits (Shaw et al., 2018): attention between positions i and j also scores
// the query against a learned embedding of their distance j - i, clipped to [-M, M]:
//   logit[i][j] = (q_i . k_j + q_i . E[clip(j - i, -M, M)]) / sqrt(Dh)
// The table E is [2M + 1, Dh]; row M + d holds distance d. The functions below compute the
// relative term q_i . E[clip(j - i)], unscaled, q [..., L, Dh] -> [..., L, L]:
//
// - relative_logits_direct gathers E_rel [L, L, Dh] (E_rel[i][j] = E[clip(j - i)]) and takes each
//   q_i against its own [L, Dh] slice: L^2 Dh memory, the way the paper writes it.
// - relative_logits_skewed scores every query against every distance once, R = q @ E_all^T with
//   E_all [2L - 1, Dh] (distances -(L-1) .. L-1), and then moves R[i][j - i + L - 1] to [i][j] by
//   reshaping alone ("skewing", the Music Transformer's trick): L Dh memory for the embeddings.
//
// Skewing, for L = 3 (R's rows hold distances -2 .. 2; the wanted entries are in brackets):
//   R = [ a b [c d e] ]     flattened, drop the first L - 1 = 2 entries, read rows of 2L - 2 = 4:
//       [ f [g h i] j ]     [c d e f] [g h i j] [k l m n] -> keep the first L columns of each row:
//       [ [k l m] n o ]     [c d e] [g h i] [k l m]
#pragma once

#include "../autograd/ops.h"

namespace axiom::nn {

// q [..., L, Dh], table [2M + 1, Dh] -> q_i . E[clip(j - i, -M, M)]  [..., L, L]
Tensor relative_logits_direct(const Tensor& q, const Tensor& table);
Tensor relative_logits_skewed(const Tensor& q, const Tensor& table);
// The bias that adds relative positions to attention (autograd/ops.h): relative_logits_skewed / sqrt(Dh),
// q [..., H, L, Dh] as attention_queries lays it out -> [..., H, L, L].
Tensor relative_bias(const Tensor& q, const Tensor& table);
// One query at position `query` against the keys at positions 0..keys-1 (a sampler's step, where
// only the keys seen so far exist): q_t [..., 1, Dh] -> [..., 1, keys], row `query` of the above.
Tensor relative_logits_step(const Tensor& q_t, const Tensor& table, int64_t query, int64_t keys);

}  // namespace axiom::nn
