// Options every model-running subcommand shares: model folder, threads, context, image size.
#pragma once

#include <memory>
#include <set>
#include <string>

#include "apps/qwen35/args.h"
#include "qwen35/engine.h"

namespace qwen35::app {

// The largest --threads (more threads than this only fight over the cores).
int64_t max_threads();

// Images larger than this many tokens are resized down unless --image-max-tokens says otherwise.
constexpr int64_t kDefaultImageMaxTokens = 1024;

// Option names read by engine_options_from (add them to a command's Args).
const std::set<std::string>& engine_option_names();
extern const char* kEngineOptionsHelp;

// The model of every command that takes -m: -m / --model, else the bundled tiny model (saying so
// on stderr), else an error naming both ways to give one.
std::string model_or_bundled(const Args& args);
std::string model_or_bundled(const std::string& given);
// Without -m: the bundled tiny model (model_or_bundled). Without --weights, a checkpoint of float
// weights that would not fit comfortably in this machine's memory is quantized at load to a type
// that fits a 16 GB machine (saying so).
EngineOptions engine_options_from(const Args& args);
// The --weights default above: "" or a preset name, with the notice to print ("" for none).
std::string default_weights(const std::string& model_dir, std::string* notice);
// The bundled tiny model: $QWEN35_DEFAULT_MODEL, else <bin>/../share/qwen35/tiny-qwen35 (installed),
// else <bin>/../../tests/data/tiny-qwen35 (build/bin/qwen35 in a source checkout); "" when none exists.
std::string bundled_model_dir();
// Loads the engine or throws qwen35::Error with the load status message.
std::unique_ptr<Engine> load_engine(const EngineOptions& options);

// Sampling options: --temp --top-p --top-k --min-p --seed --presence-penalty --frequency-penalty
// --repeat-penalty --stop (repeatable via commas is not supported; one string) --reasoning-budget N.
// Speculation (--spec, --draft-max) is an engine option: it also decides whether the MTP head runs.
const std::set<std::string>& sampling_option_names();
extern const char* kSamplingOptionsHelp;
SamplingParams sampling_from(const Args& args, SamplingParams base);
// --reasoning-budget: -1 (unlimited, the default) or a number of tokens >= 0.
int64_t reasoning_budget_from(const Args& args);

}  // namespace qwen35::app
