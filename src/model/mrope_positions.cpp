#include "model/mrope_positions.h"

#include <algorithm>
#include <limits>

#include "core/error.h"

namespace qwen35 {
namespace {

template <typename Id>
MropePositions rope_index(std::span<const Id> ids, VisionPads pads, std::span<const ImageGrid> grids, int merge,
                          const MropeStart& start) {
  const auto is_pad = [&](int64_t id) { return id == pads.image || id == pads.video; };
  const int64_t n = int64_t(ids.size());
  MropePositions out;
  out.length = n;
  out.positions.resize(size_t(3 * n));
  int32_t* pt = out.positions.data();
  int32_t* ph = pt + n;
  int32_t* pw = ph + n;

  // The cursor: the next free position. For a continuation it is the position the first new
  // token would get from decode_position.
  int64_t cur = start.cache_len + start.rope_delta;
  int64_t max_pos = cur - 1;
  size_t next_grid = 0;
  const auto check_range = [](int64_t p) {
    if (p > std::numeric_limits<int32_t>::max() || p < 0) fail("MRoPE position ", p, " is out of range");
    return int32_t(p);
  };
  for (int64_t i = 0; i < n;) {
    if (!is_pad(int64_t(ids[size_t(i)]))) {
      pt[i] = ph[i] = pw[i] = check_range(cur);
      max_pos = cur;
      ++cur, ++i;
      continue;
    }
    if (next_grid >= grids.size())
      fail("image token at index ", i, " but only ", grids.size(), " image grid(s) were given");
    const int64_t pad = int64_t(ids[size_t(i)]);  // the item's kind: all its tokens are this pad
    const ImageGrid& g = grids[next_grid++];
    const int64_t count = image_token_count(g, merge);
    const int64_t gh = g.h / merge, gw = g.w / merge;
    if (i + count > n) fail("image ", next_grid - 1, " needs ", count, " image tokens from index ", i, " but the sequence ends first");
    for (int64_t k = 0; k < count; ++k) {
      if (int64_t(ids[size_t(i + k)]) != pad)
        fail("image ", next_grid - 1, " needs ", count, " consecutive image tokens from index ", i, ", found a ",
             ids[size_t(i + k)], " at index ", i + k);
      const int64_t frame = k / (gh * gw), row = k / gw % gh, col = k % gw;
      pt[i + k] = check_range(cur + frame);
      ph[i + k] = check_range(cur + row);
      pw[i + k] = check_range(cur + col);
    }
    max_pos = std::max(max_pos, cur + std::max({g.t - 1, gh - 1, gw - 1}));
    cur += std::max(gh, gw);
    i += count;
  }
  if (next_grid != grids.size())
    fail(grids.size(), " image grid(s) were given but the tokens hold ", next_grid, " image(s)");
  // An empty chunk leaves the delta unchanged (max_pos + 1 == cursor).
  out.rope_delta = max_pos + 1 - (start.cache_len + n);
  return out;
}

template <typename Id>
std::vector<Id> expand(std::span<const Id> ids, int64_t image_token_id, std::span<const ImageGrid> grids, int merge) {
  size_t images = 0;
  int64_t extra = 0;
  for (Id id : ids) {
    if (int64_t(id) != image_token_id) continue;
    if (images < grids.size()) extra += image_token_count(grids[images], merge) - 1;
    ++images;
  }
  if (images != grids.size())
    fail("the prompt holds ", images, " image token(s) but ", grids.size(), " image(s) were given");
  std::vector<Id> out;
  out.reserve(ids.size() + size_t(extra));
  size_t k = 0;
  for (Id id : ids) {
    if (int64_t(id) != image_token_id) {
      out.push_back(id);
      continue;
    }
    out.insert(out.end(), size_t(image_token_count(grids[k++], merge)), id);
  }
  return out;
}

}  // namespace

int64_t image_token_count(const ImageGrid& g, int merge) {
  if (merge <= 0) fail("spatial merge size must be positive, got ", merge);
  if (g.t <= 0 || g.h <= 0 || g.w <= 0 || g.h % merge != 0 || g.w % merge != 0)
    fail("bad image grid (t, h, w) = (", g.t, ", ", g.h, ", ", g.w, ") for merge size ", merge);
  return g.t * (g.h / merge) * (g.w / merge);
}

MropePositions get_rope_index(std::span<const int32_t> ids, VisionPads pads, std::span<const ImageGrid> grids,
                              int spatial_merge_size, const MropeStart& start) {
  return rope_index(ids, pads, grids, spatial_merge_size, start);
}

MropePositions get_rope_index(std::span<const int64_t> ids, VisionPads pads, std::span<const ImageGrid> grids,
                              int spatial_merge_size, const MropeStart& start) {
  return rope_index(ids, pads, grids, spatial_merge_size, start);
}

MropePositions get_rope_index(std::span<const int32_t> ids, int64_t image_token_id, std::span<const ImageGrid> grids,
                              int spatial_merge_size, const MropeStart& start) {
  return rope_index(ids, VisionPads{image_token_id, -1}, grids, spatial_merge_size, start);
}

MropePositions get_rope_index(std::span<const int64_t> ids, int64_t image_token_id, std::span<const ImageGrid> grids,
                              int spatial_merge_size, const MropeStart& start) {
  return rope_index(ids, VisionPads{image_token_id, -1}, grids, spatial_merge_size, start);
}

std::vector<int32_t> expand_image_tokens(std::span<const int32_t> ids, int64_t image_token_id,
                                         std::span<const ImageGrid> grids, int merge_size) {
  return expand(ids, image_token_id, grids, merge_size);
}

std::vector<int64_t> expand_image_tokens(std::span<const int64_t> ids, int64_t image_token_id,
                                         std::span<const ImageGrid> grids, int merge_size) {
  return expand(ids, image_token_id, grids, merge_size);
}

}  // namespace qwen35
