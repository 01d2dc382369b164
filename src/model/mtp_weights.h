// The multi-token-prediction (MTP) head's weights, spec 2.4 and 10: one extra full-attention
// decoder layer that turns a pair (h_t, x_{t+1}) -- the main model's final-normed hidden state and
// the next token -- into a guess for x_{t+2}. A checkpoint without the head has no MtpWeights.
//
// Sources (each binds into this one struct):
//   Hugging Face   mtp.*                          bind_mtp_weights() below
//   GGUF           blk.N.nextn.* + blk.N.attn_* / ffn_* with N = block_count - 1 (the branch `gguf`)
//   MTP-only GGUF  the same tensors in a sidecar file (`--mtp FILE`, gguf.md D2)
#pragma once

#include <vector>

#include "io/checkpoint.h"
#include "model/config.h"
#include "model/nextn_tensors.h"
#include "model/text_weights.h"
#include "model/weight_prep.h"

namespace qwen35 {

struct MtpWeights {
  // HF name                          GGUF name (blk.N.)         shape        note
  std::vector<float> pre_fc_norm_embedding;  // mtp.pre_fc_norm_embedding  nextn.enorm  [H]  as (1 + w)
  std::vector<float> pre_fc_norm_hidden;     // mtp.pre_fc_norm_hidden     nextn.hnorm  [H]  as (1 + w)
  WeightMatrix fc;                           // mtp.fc                     nextn.eh_proj  [H, 2H]: input
                                             //   concat[normed embedding ; normed hidden], embedding FIRST
  LayerWeights layer;                        // mtp.layers.0.*             attn_*, ffn_*: kind kAttention,
                                             //   the same shapes as a full-attention decoder layer
  std::vector<float> norm;                   // mtp.norm                   nextn.shared_head_norm [H] as (1 + w)
  // Shared with the main model in every released checkpoint (mtp_use_dedicated_embeddings false):
  // HF binds the main model's views; GGUF binds nextn.embed_tokens / nextn.shared_head_head when
  // present, else token_embd / output (gguf.md D9).
  WeightMatrix embed;    // [V, H]
  WeightMatrix lm_head;  // [V, H]
};

// True when the checkpoint holds a Hugging Face MTP head (mtp.fc.weight).
bool has_mtp_weights(const Checkpoint& ck);

// Binds mtp.* (names, dtypes and shapes checked against the config; only layer 0 is used, as vLLM
// and llama.cpp do); embed and lm_head are taken from `text`. The checkpoint must outlive the
// weights.
MtpWeights bind_mtp_weights(const Checkpoint& ck, const TextConfig& cfg, const TextWeights& text);
// The same from a GGUF file's MTP block (bundled or a sidecar; bind_nextn has checked names and
// shapes). Its own nextn.embed_tokens / nextn.shared_head_head when present, else `text`'s; its
// shared_head_norm when present, else the trunk's final norm. The file must outlive the weights.
MtpWeights bind_mtp_weights(const NextnTensors& nextn, const TextConfig& cfg, const TextWeights& text);

// The head's matrices under their GGUF names as block `layer` of a file that bundles it
// (block_count - 1: 32 for 9B): blk.N.attn_q/k/v/output, blk.N.ffn_gate/up/down (or the MoE
// FFN's, as for_each_layer_matrix names them) and
// blk.N.nextn.eh_proj, then nextn.embed_tokens / nextn.shared_head_head when they are the
// head's own (not `text`'s).
std::vector<NamedMatrix> mtp_named_matrices(MtpWeights& w, int layer, const TextWeights& text);


}  // namespace qwen35
