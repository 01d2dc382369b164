// Multimodal RoPE positions (spec section 5): the (temporal, height, width) position of every
// prompt token, the rope delta used after the prompt, and the processor's expansion of one
// <|image_pad|> per image into one pad token per merged patch.
//
// get_rope_index follows Hugging Face's Qwen3.5 rule. Text runs count on from a cursor on all
// three axes. An image of grid (t, h, w) patches with merge m covers t * (h/m) * (w/m) tokens
// in (frame, row, column) order at (cursor + frame, cursor + row, cursor + column); the cursor
// then advances by max(h, w) / m. A video is split into its temporal pairs, each positioned as an
// image of grid (1, h, w) with <|video_pad|> tokens (its time stamp and markers are text between
// them). rope_delta = max position + 1 - sequence length, and a token appended later at sequence
// index i sits at i + rope_delta on every axis.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace qwen35 {

// An image's patch grid as the image processor reports it (image_grid_thw), before merging.
struct ImageGrid {
  int64_t t = 1;
  int64_t h = 0;
  int64_t w = 0;
};

// Number of <|image_pad|> tokens (= vision tower outputs) for one image. Throws qwen35::Error
// when the grid is not positive or h, w are not multiples of merge_size.
int64_t image_token_count(const ImageGrid& grid, int merge_size);

struct MropePositions {
  int64_t length = 0;              // tokens in this call (T)
  std::vector<int32_t> positions;  // [3, T]: the temporal row, then height, then width
  int64_t rope_delta = 0;

  const int32_t* axis(int a) const { return positions.data() + size_t(a) * size_t(length); }
  int32_t at(int a, int64_t i) const { return axis(a)[i]; }
};

// Where a chunk starts when it continues a sequence whose first cache_len tokens are already
// processed with delta rope_delta. The default is a fresh sequence. Positions of a prefix never
// depend on what follows, so prefill in pieces equals one call over the whole sequence.
struct MropeStart {
  int64_t cache_len = 0;
  int64_t rope_delta = 0;
};

// The pad tokens vision items fill: <|image_pad|> for images, <|video_pad|> for a video's pairs
// (-1: none of that kind).
struct VisionPads {
  int64_t image = -1;
  int64_t video = -1;
};

// ids: token ids after image and video expansion; grids: one per vision item (an image, or one
// temporal pair of a video as grid (1, h, w)) in prompt order. Each item must appear as exactly
// image_token_count(grid) consecutive tokens of one pad kind (two items back to back are split by
// the grid sizes). Throws qwen35::Error when the tokens and the grids disagree. The returned
// rope_delta applies to the whole sequence (prefix + this chunk).
MropePositions get_rope_index(std::span<const int32_t> ids, VisionPads pads, std::span<const ImageGrid> grids,
                              int spatial_merge_size, const MropeStart& start = {});
MropePositions get_rope_index(std::span<const int64_t> ids, VisionPads pads, std::span<const ImageGrid> grids,
                              int spatial_merge_size, const MropeStart& start = {});
// Images only (every grid is an image of image_token_id tokens).
MropePositions get_rope_index(std::span<const int32_t> ids, int64_t image_token_id, std::span<const ImageGrid> grids,
                              int spatial_merge_size, const MropeStart& start = {});
MropePositions get_rope_index(std::span<const int64_t> ids, int64_t image_token_id, std::span<const ImageGrid> grids,
                              int spatial_merge_size, const MropeStart& start = {});

// Position (the same on all three axes) of the token at absolute sequence index cache_len
// during decoding.
inline int64_t decode_position(int64_t cache_len, int64_t rope_delta) { return cache_len + rope_delta; }

// The processor's expansion: the k-th image_token_id in ids becomes image_token_count(grids[k])
// copies of it. Throws qwen35::Error when the number of image tokens differs from grids.size().
std::vector<int32_t> expand_image_tokens(std::span<const int32_t> ids, int64_t image_token_id,
                                         std::span<const ImageGrid> grids, int merge_size);
std::vector<int64_t> expand_image_tokens(std::span<const int64_t> ids, int64_t image_token_id,
                                         std::span<const ImageGrid> grids, int merge_size);

}  // namespace qwen35
