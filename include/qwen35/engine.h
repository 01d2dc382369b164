// qwen35 public API: load a Qwen3.5 model once, then run conversations in sessions.
//
// Thread contract
//   * Engine is immutable after Engine::load and safe to share across threads: weights,
//     tokenizer, chat format, kernel table and thread pool (EngineOptions::threads) never change.
//   * A Session belongs to one thread at a time; it owns one timeline (tokens and caches).
//     Different sessions may run on different threads at once, but each forward pass uses the
//     engine's thread pool, so one worker thread driving all sessions is the intended use.
//   * PrefixCache is internally locked and may be shared by sessions on any thread.
//   * Callbacks run on the thread that drives the session.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "qwen35/chat.h"

namespace qwen35 {

// ---------------------------------------------------------------------------------------------
// Engine, sessions, caches

// Diagnostics, not tuning: how GenerationBatch advances a prompt while other generations batched
// with it decode (their next token waits for each round). The defaults are the release path; the
// other values exist to measure it, and no value changes an output.
struct DecodingPrefillDiagnostics {
  // Prompt tokens per round, rounded up to a multiple of 64; only when prefill_block is one (a
  // prompt keeps its bits where each block boundary is a delta-rule chunk boundary of its solo run).
  int64_t block = 64;
  // Layers that block goes through per round, the rest in the next rounds. 0: paced, as many as
  // keep a round within (1 + share) times a round of decoding alone, measured.
  int layers = 2;
  double share = 0.5;
};

struct EngineOptions {
  std::string model_dir;         // a Hugging Face folder or a GGUF file
  std::string mmproj_path;       // GGUF only: the vision projector; empty: an mmproj*.gguf beside the model
  bool no_mmproj = false;        // GGUF only: text only even when a projector lies beside the model
  std::string mtp_path;          // GGUF only: an MTP-only sidecar file
  int threads = 0;               // 0: one per core
  int64_t context_size = 0;      // tokens per session; 0: min(model maximum, 32768)
  int64_t prefill_block = 512;   // tokens per prefill step
  DecodingPrefillDiagnostics decoding_prefill;  // diagnostics: leave at the defaults
  int image_size = 0;            // > 0: resize images to this square size (multiple of 32) first
  int64_t image_min_pixels = 0;  // 0: from preprocessor_config.json
  int64_t image_max_pixels = 0;  // 0: from preprocessor_config.json
  int64_t image_max_tokens = 0;  // > 0: larger images are resized down to at most this many tokens
  // Weight types: "" keeps the checkpoint's own; "q4_k_m", "q8_0", "bf16", ... quantize or convert
  // float weights at load (see `qwen35 serve --help`).
  std::string weights;
  // Default speculation of requests. With mode kOff or kPld the MTP head is not run at all (no
  // request can use it); kMtp fails to load a model without one.
  SpeculativeParams speculative;
  // Vocabulary of the MTP head's drafts: ids [0, N) (rounded up to 16) and the added tokens. A draft
  // is only a guess the main model checks, so this changes speed, never the output. 0: every id.
  int64_t draft_vocab = 32768;
  // Attention KV cache element type: "f16" (half the memory and bandwidth) or "f32" (the
  // reference's math exactly, for parity checks).
  std::string kv_type = "f16";
  // Where the text decoder runs: "cpu", "vulkan" (the best Vulkan device), "vulkan:N" (device N of
  // `qwen35 info --devices`) or "auto" (a Vulkan GPU when there is one, else the CPU; a software
  // rasterizer such as lavapipe counts as none). On a device the weights stay in their stored
  // formats, and speculative decoding, the prefix cache's snapshots and MoE models are not there yet.
  std::string device = "cpu";
  // A folder for prepared (repacked / quantized) weights: the first load writes them there, later
  // loads of the same model files, weights and kernels map them instead. Empty: none.
  std::string weights_cache_dir;
  // Progress while loading: stage name and fraction in [0, 1].
  std::function<void(const std::string& stage, double fraction)> on_progress;
  // Notices while loading (what the weight cache did), one line each.
  std::function<void(const std::string& line)> on_notice;
};

struct ModelInfo {
  std::string name;          // folder name
  std::string path;
  int64_t vocab_size = 0;
  int64_t context_size = 0;  // per-session limit in use
  int64_t max_position_embeddings = 0;
  bool has_vision = false;
  int num_layers = 0;
  int64_t hidden_size = 0;
  size_t weight_bytes = 0;   // weights as the kernels read them
  std::string weights;       // the --weights choice in effect ("" = the checkpoint's own types)
  std::string kv_type;       // "f16" or "f32"
  std::string kernels;       // kernel table in use (ref, avx2, avx512, amx)
  std::string device;        // where the text decoder runs: "cpu" or "vulkan:N (name)"
  int threads = 0;
  std::string format;        // "gguf" or "safetensors"
  std::string file_type;     // "Q4_K_M", "BF16", ... (llama.cpp's file type, or the main dtype)
  uint64_t file_bytes = 0;   // size of the model file(s) on disk
  std::string mmproj_path;   // the vision projector in use (GGUF)
  bool has_mtp = false;      // the model carries an MTP block
  bool mtp_active = false;   // ... and the engine runs it for speculation (--spec auto or mtp)
  int64_t mtp_draft_vocab = 0;  // ids a draft step scores (vocab_size: all; 0: no head runs)
  std::vector<std::string> warnings;  // problems worth telling the user at start (e.g. an unknown chat template)
};

class PrefixCache;
class Session;
class Snapshot;
class Generation;
class PreparedChat;
struct EngineImpl;
struct ImplAccess;

class Engine {
 public:
  static std::unique_ptr<Engine> load(const EngineOptions& options, Status* status);
  ~Engine();

  const ModelInfo& info() const;
  // Sampling defaults from generation_config.json (temperature, top_p, top_k, ...).
  SamplingParams default_sampling() const;
  std::unique_ptr<Session> new_session(PrefixCache* cache = nullptr) const;

  // Text utilities.
  std::vector<int32_t> tokenize(const std::string& text) const;
  std::string detokenize(const std::vector<int32_t>& ids, bool skip_special = false) const;
  // Renders a chat exactly as the model's template (with the generation prompt).
  Status render_chat(const ChatRequest& request, std::string* prompt) const;
  // Does the session-independent part of starting a chat: renders, tokenizes, decodes and
  // preprocesses the images, checks the prompt fits the context. Safe on any thread, so a server
  // can keep this off the thread that drives its sessions. nullptr with *status set
  // (kInvalidArgument, kContextOverflow) for a request that cannot run.
  std::unique_ptr<PreparedChat> prepare_chat(const ChatRequest& request, Status* status) const;
  // Compiles a constrained-decoding format (its grammar, against this engine's vocabulary) into
  // format->compiled. Safe on any thread, so a server compiles off the thread that drives its
  // sessions; kInvalidArgument names what cannot be enforced (a schema keyword and its JSON
  // pointer, a grammar's line and column).
  Status compile_output_format(OutputFormat* format) const;

 private:
  friend struct ImplAccess;  // the runtime's side (src/runtime/engine_internal.h)
  Engine() = default;
  std::unique_ptr<EngineImpl> impl_;
};

// An LRU store of session snapshots keyed by token prefix, under a byte budget. A request whose
// prompt starts with a stored prefix resumes from it and processes only the rest.
class PrefixCache {
 public:
  explicit PrefixCache(size_t budget_bytes);
  ~PrefixCache();
  size_t bytes() const;
  size_t budget() const;
  size_t entries() const;
  int64_t hits() const;
  int64_t misses() const;

  struct Impl;

 private:
  friend struct ImplAccess;
  std::unique_ptr<Impl> impl_;
};

// A copy of a session's state at one point of its timeline: DeltaNet conv and recurrent states,
// the KV rows, the tokens, and the MTP head's cache when the engine runs it. Taking one costs a
// copy of all of that (bytes()).
class Snapshot {
 public:
  ~Snapshot();
  size_t bytes() const;
  int64_t tokens() const;

  struct Impl;

 private:
  friend struct ImplAccess;
  explicit Snapshot(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class Session {
 public:
  ~Session();

  // Starts answering a chat: renders, tokenizes, loads images, reuses the longest cached prefix.
  // The work happens in Generation::step(), so a caller can interleave several sessions.
  std::unique_ptr<Generation> start_chat(const ChatRequest& request, const SamplingParams& params,
                                         EventCallback on_event, Status* status);
  // Starts a prepared chat; `chat` is consumed (empty afterwards).
  std::unique_ptr<Generation> start_prepared(PreparedChat&& chat, const SamplingParams& params, EventCallback on_event,
                                             Status* status);
  // Same for a raw prompt (ids used as they are; no template).
  std::unique_ptr<Generation> start_completion(const std::vector<int32_t>& prompt, const SamplingParams& params,
                                               EventCallback on_event, Status* status);

  // Runs a whole generation to the end (start_* + step() until done).
  GenerationResult chat(const ChatRequest& request, const SamplingParams& params, EventCallback on_event,
                        Status* status);
  GenerationResult complete(const std::vector<int32_t>& prompt, const SamplingParams& params,
                            EventCallback on_event, Status* status);

  // The timeline: tokens processed so far.
  const std::vector<int32_t>& tokens() const;
  // Explicit, costed copies of the state; restoring continues bit-identically.
  std::unique_ptr<Snapshot> snapshot() const;
  void restore(const Snapshot& snapshot);
  void reset();

  struct Impl;

 private:
  friend struct ImplAccess;
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A chat ready to start on any session of its engine (Engine::prepare_chat). Holds the prompt's
// tokens and the images' pixel arrays; starting it moves them into the generation.
class PreparedChat {
 public:
  ~PreparedChat();
  PreparedChat(PreparedChat&&) noexcept;
  PreparedChat& operator=(PreparedChat&&) noexcept;
  // The prompt's tokens, images expanded to their placeholder tokens.
  const std::vector<int32_t>& tokens() const;

  struct Impl;

 private:
  friend struct ImplAccess;
  explicit PreparedChat(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// One request in progress on a session. The session must outlive it; while it runs, the
// session's restore()/reset() are refused.
class Generation {
 public:
  ~Generation();
  // Does a bounded slice of work (one prefill block, or one decode/verify step) and delivers its
  // events. Returns false once finished; result() is then final.
  bool step();
  bool done() const;
  void cancel();
  const GenerationResult& result() const;
  // Tokens of the prompt still to process (0 once prefill is done).
  int64_t pending_prompt_tokens() const;

  struct Impl;

 private:
  friend struct ImplAccess;
  explicit Generation(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The Status of what a generation's step() threw: kInvalidArgument where the request asked for
// what the engine bounds (an output format whose token masks cost past the masker's bound: the
// grammar's fault, a 400), kInternal for anything else.
Status failure_status(const std::exception& e);

// Continuous batching: steps the generations of several sessions together. One step() of each
// runs on a thread of its own, and the model passes they make in that round run as one batched
// forward, every weight streamed once for all of them. A generation's tokens, logprobs and state
// are the bits it gets stepping alone. One caller thread at a time.
class GenerationBatch {
 public:
  explicit GenerationBatch(const Engine& engine);
  ~GenerationBatch();

  struct Outcome {
    bool more = false;          // what step() returned
    std::exception_ptr error;   // what it threw, if it did (failure_status says whose fault)
  };
  // One step() of each generation (of distinct sessions); outcomes[i] belongs to gens[i].
  void step(const std::vector<Generation*>& gens, std::vector<Outcome>& outcomes);
  uint64_t batches() const;       // batched model passes so far
  uint64_t batched_rows() const;  // token rows they held

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace qwen35
