#include "kernels/weight_rows.h"

#include "core/error.h"

namespace qwen35::kernels {

int64_t layout_group_rows(uint8_t layout) {
  if (layout == 0) return 1;
  for (const KernelTable* t : supported_tables())
    if (t->packing.layout == layout) return t->packing.group_rows;
  fail("weights packed in layout ", int(layout), ", which no kernel table on this CPU reads");
}

WeightMatrix weight_rows(const WeightMatrix& w, int64_t row0, int64_t n) {
  if (row0 < 0 || n < 0 || row0 + n > w.rows)
    fail("weight_rows: rows [", row0, ", ", row0 + n, ") are outside the matrix's ", w.rows);
  WeightMatrix v = w;
  v.rows = n;
  if (w.layout == 0) {
    v.data = w.row(row0);
    return v;
  }
  const int64_t g = layout_group_rows(w.layout);
  if (row0 % g != 0) fail("weight_rows: row ", row0, " does not start a group of ", g, " packed rows");
  v.data = static_cast<const uint8_t*>(w.data) + size_t(row0 / g) * w.group_bytes;
  return v;
}

}  // namespace qwen35::kernels
