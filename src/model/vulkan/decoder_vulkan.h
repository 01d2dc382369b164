// The decoder's forward (TextDecoder::forward_on) on a Vulkan device. The weights are uploaded once,
// in their stored formats (a model loaded with prepare = false: plain GGUF block rows or float
// rows); each sequence's KV caches (f16 or f32, as its host caches) and DeltaNet conv and
// recurrent states live on the device (DecoderState::device); a call is recorded as one command
// buffer, from the inputs to the LM head, and only the logits (or the hidden rows, when asked
// for) come back.
//
// The mixture-of-experts FFN runs on the device but for its routing: the router logits of a layer
// come back and the host's kernels::moe_route (the function the CPU runs) picks the experts, so a
// row's experts are the CPU's for the same logits; the pass then goes on with the chosen experts'
// matrices over their rows (moe()). Observers get the residual stream and the routing brought back.
//
// A traced block (DecoderSegment::traces, a verify block) keeps each DeltaNet layer's pre-conv
// rows and gate logits in the sequence's device state, so that a partly accepted draft replays the
// recurrences there (replay_deltanet) instead of being fed again. The host's trace vectors are
// left as they are.
//
// Not on the device yet (a clear error): segments that stop part-way through the layers.
//
// Thread contract: one call at a time, as its Device.
#pragma once

#include <memory>
#include <unordered_map>
#include <vector>

#include "kernels/vulkan/buffer.h"
#include "kernels/vulkan/device.h"
#include "kernels/vulkan/ops.h"
#include "kernels/vulkan/pass.h"
#include "model/config.h"
#include "model/decoder_backend.h"
#include "model/rope.h"
#include "model/text_decoder.h"

namespace qwen35 {

class VulkanDecoderBackend final : public DecoderBackend {
 public:
  // Uploads every decoder weight, every expert included, but the embedding (looked up on the
  // host); throws DeviceError when the device is short of memory.
  VulkanDecoderBackend(vk::Device& dev, const TextConfig& cfg, const TextWeights& w);
  // The same on device `index` of vk::list_devices(), opened for this backend alone.
  static std::unique_ptr<VulkanDecoderBackend> open(int index, const TextConfig& cfg, const TextWeights& w);
  ~VulkanDecoderBackend() override;

  vk::Device& device() const { return dev_; }

  // What the backend holds on the device for these weights and one sequence of `context` tokens
  // with KV elements of `kv` (the fit check at load; scratch rows for a block come on top).
  static uint64_t device_bytes(const TextConfig& cfg, const TextWeights& w, int64_t context, DType kv);

  void begin(const float* inputs, const int32_t* positions, std::span<const DecoderSegment> segments,
             int64_t T) override;
  bool enter_layer(int i) override { return true; }
  void norm(const std::vector<float>& w) override;
  void add_norm(const std::vector<float>& w) override;
  void moe(const MoeWeights& w, int layer, DecoderObserver* observer) override;
  void add() override;
  void observe(int layer, DecoderObserver& observer) override;
  // With out null the pass waits for logits() (or the next begin()) to be submitted.
  void finish(const std::vector<float>& final_norm, float* out) override;
  void logits(const kernels::WeightMatrix& lm_head, std::span<const int64_t> rows, float* out) override;
  void replay_deltanet(DecoderState& state, int64_t n) override;

  // The layer primitives (layer_ops.h) as shaders on the rows below.
  void linear(Rows in, std::span<const LinearTo> outs) override;
  using LayerOps::linear;
  bool delta_rule_fused(const DeltaNetWeights&, int) override { return false; }
  void conv(const DeltaNetWeights& w, int index) override;
  void gates(const DeltaNetWeights& w) override;
  void delta(const DeltaNetWeights& w, int index) override;
  void head_norms(const AttentionWeights& w) override;
  void rope() override;
  void attend(int index) override;
  void output_gate() override;
  void swiglu() override;

 private:
  class State;
  using BufferPtr = std::unique_ptr<vk::Buffer>;
  struct Matrix {
    BufferPtr buf;
    vk::DeviceMatrix m;
  };
  void upload(const kernels::WeightMatrix& w);
  void upload(const std::vector<float>& v);
  const vk::DeviceMatrix& matrix(const kernels::WeightMatrix& w) const;
  vk::Addr vec(const std::vector<float>& v) const;
  State& state_of(DecoderState& s);
  void reserve(int64_t T);
  void flush();
  vk::Addr rows(Rows r) const;
  // y[T, w.rows] (rows y_stride apart) = x[T, w.cols] (rows x_stride apart) * w^T.
  void linear(const kernels::WeightMatrix& w, vk::Addr x, int64_t T, int64_t x_stride, vk::Addr y, int64_t y_stride);

  VulkanDecoderBackend(std::unique_ptr<vk::Device> dev, const TextConfig& cfg, const TextWeights& w);
  void upload_all(const TextWeights& w);

  std::unique_ptr<vk::Device> owned_;  // when open() made the device
  vk::Device& dev_;
  const TextConfig& cfg_;
  const TextWeights& w_;
  MRope rope_;
  std::unordered_map<const void*, Matrix> matrices_;  // by the host WeightMatrix
  std::unordered_map<const void*, BufferPtr> vectors_;  // by the host vector (norms, conv taps, gates)
  int64_t max_cols_ = 0;                              // of any matrix (activation scratch)

  // The call: its segments, rows and pass.
  std::span<const DecoderSegment> segments_;
  int64_t T_ = 0;
  std::unique_ptr<vk::Pass> pass_;
  bool have_rows_ = false;  // the last call's hidden rows are in hidden_

  // Scratch for `capacity_` rows, grown between passes.
  int64_t capacity_ = 0;
  BufferPtr x_, normed_, mixed_, hidden_, cos_, sin_, act_q_, act_d_;
  BufferPtr qkv_, conv_out_, z_, beta_, g_, q_, k_, core_;  // DeltaNet
  BufferPtr delta_work_;                                   // the chunked delta rule's scratch
  BufferPtr qg_, kr_, vr_, attn_;                          // attention
  BufferPtr gate_, up_;                                    // MLP
  int64_t gate_width_ = 0;                                 // I, of the last projection into gate_
  // Mixture of experts: router logits [T, E], shared gate [T], the shared expert's gate/up [T, Is]
  // and output [T, H]; the (token, slot) rows grouped by expert: inputs [T k, H], gate/up
  // [T k, I], outputs [T k, H].
  BufferPtr router_, shared_gate_, sg_, su_, shared_out_, xg_, eg_, eu_, ey_;
  // The routing of the current MoE layer, on the host (moe()).
  std::vector<float> route_logits_, route_probs_, route_weights_, route_shared_;
  std::vector<int32_t> route_ids_, route_row_;
  std::vector<float> observed_;  // the residual stream brought back for an observer
  BufferPtr logits_;
  int64_t logits_rows_ = 0;
};

}  // namespace qwen35
