// Bicubic resampling that reproduces Pillow's Image.resize(size, Image.BICUBIC) on 8-bit RGB
// bit for bit: the reference image processor resizes with Pillow, and the vision tower sees
// those exact bytes.
//
// The facts it follows (Pillow libImaging/Resample.c): separable, horizontal pass first (only
// over the rows the vertical pass will read), then vertical; each pass skipped when that side
// keeps its size. Cubic kernel with a = -0.5 and support 2, stretched by the scale factor when
// shrinking (so downscaling averages, like an antialiasing filter); taps are normalised in
// double precision, then rounded to 22-bit fixed point; sums start at one half and are clipped
// to 0..255 after an arithmetic shift. The intermediate image is stored as uint8.
#pragma once

#include "io/image.h"

namespace qwen35 {

// Throws qwen35::Error when a size is not positive.
RgbImage resize_bicubic(const RgbImage& src, int out_width, int out_height);

}  // namespace qwen35
