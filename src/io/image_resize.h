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

// Bicubic resampling as torchvision's resize(BICUBIC, antialias=True) computes it on a uint8 tensor
// by its float path (the video processor's resize, golden_video/README.md "Two resize paths"):
// uint8 -> float32, torch.nn.functional.interpolate(mode="bicubic", align_corners=False,
// antialias=True), clamp to 0..255, round half to even, back to uint8.
//
// The facts it follows (ATen/native/cpu/UpSampleKernel.cpp, separable_upsample_generic_Nd_kernel_impl
// and HelperInterpCubic): the same window as Pillow (cubic with a = -0.5, support 2 stretched by
// the scale when shrinking) but every step in float32 where torch uses float: scale = in / out in
// float, window centre and tap arguments with torch's float/double mix, taps normalised by their
// float sum; horizontal pass first over every row, then vertical, each skipped when that side keeps
// its size; each output is tap 0's product plus the others' in order, in float (multiply-adds
// fused as torch's release builds fuse them); the intermediate image stays float. Not Pillow's
// result: 8-bit fixed point there, float here. Against the official pipeline's video frames, 4 of
// 921600 samples differ, by one level, at values within 3e-5 of a .5 tie (golden_video README:
// float32 against float64 alone moves 29).
// Throws qwen35::Error when a size is not positive.
RgbImage resize_bicubic_torch(const RgbImage& src, int out_width, int out_height);

}  // namespace qwen35
