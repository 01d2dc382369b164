// A contiguous range of a weight matrix's rows as a matrix of its own, over the same bytes: a
// draft step can score part of the LM head without a second copy of it.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace qwen35::kernels {

// Rows [row0, row0 + n) of w. Plain rows start anywhere; in a packed layout row0 must be a
// multiple of the layout's group rows (a group's rows are interleaved), and a range that ends
// inside a group reads that group whole but writes only its own rows, as every matmul does.
WeightMatrix weight_rows(const WeightMatrix& w, int64_t row0, int64_t n);

// Rows per group of a packed layout (1 for plain rows).
int64_t layout_group_rows(uint8_t layout);

}  // namespace qwen35::kernels
