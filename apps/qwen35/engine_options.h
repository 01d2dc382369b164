// Options every model-running subcommand shares: model folder, threads, context, image size.
#pragma once

#include <memory>
#include <set>
#include <string>

#include "apps/qwen35/args.h"
#include "qwen35/engine.h"

namespace qwen35::app {

// Option names read by engine_options_from (add them to a command's Args).
const std::set<std::string>& engine_option_names();
extern const char* kEngineOptionsHelp;

EngineOptions engine_options_from(const Args& args);
// Loads the engine or throws qwen35::Error with the load status message.
std::unique_ptr<Engine> load_engine(const EngineOptions& options);

// Sampling options: --temp --top-p --top-k --min-p --seed --presence-penalty --frequency-penalty
// --repeat-penalty --stop (repeatable via commas is not supported; one string) --pld on|off.
const std::set<std::string>& sampling_option_names();
extern const char* kSamplingOptionsHelp;
SamplingParams sampling_from(const Args& args, SamplingParams base);

}  // namespace qwen35::app
