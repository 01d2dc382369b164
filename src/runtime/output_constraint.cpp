#include "runtime/output_constraint.h"

#include <cstdlib>
#include <limits>
#include <string>

#include "core/error.h"
#include "core/json_parse.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/tool_call_grammar.h"
#include "qwen35/engine.h"
#include "runtime/engine_impl.h"

namespace qwen35 {

namespace {

std::shared_ptr<const CompiledOutputFormat> compile(const OutputFormat& f) {
  auto out = std::make_shared<CompiledOutputFormat>();
  switch (f.kind) {
    case OutputFormat::Kind::kNone: return nullptr;
    case OutputFormat::Kind::kJsonObject:
      out->grammar = grammar::compile_grammar(grammar::json_schema_text_to_grammar(R"({"type": "object"})"));
      break;
    case OutputFormat::Kind::kJsonSchema: {
      grammar::JsonSchemaOptions o;
      o.strict = f.strict;
      out->grammar = grammar::compile_grammar(grammar::json_schema_text_to_grammar(f.schema, o));
      break;
    }
    case OutputFormat::Kind::kGrammar: out->grammar = grammar::compile_grammar(grammar::parse_gbnf(f.grammar)); break;
    case OutputFormat::Kind::kToolCalls:
      out->grammar = grammar::compile_grammar(
          grammar::tool_call_grammar(parse_json_limited<nlohmann::ordered_json>(f.tools_json), f.tool_name, f.parallel));
      out->lazy = f.lazy;
      break;
  }
  return out;
}

}  // namespace

Status compile_output_format(OutputFormat* format) {
  try {
    format->compiled = compile(*format);
    return Status::Ok();
  } catch (const std::exception& e) {
    return Status::Error(StatusCode::kInvalidArgument, e.what());
  }
}

Status failure_status(const std::exception& e) {
  if (dynamic_cast<const grammar::MaskWorkExceeded*>(&e))
    return Status::Error(StatusCode::kInvalidArgument, std::string("the requested output format cannot be enforced: ") + e.what());
  return Status::Error(StatusCode::kInternal, e.what());
}

namespace {

// TokenMasker's bound, or QWEN35_MAX_MASK_WORK's (a diagnostic: tests make a grammar cross it).
uint64_t mask_work_bound() {
  const char* v = std::getenv("QWEN35_MAX_MASK_WORK");
  if (!v || !*v) return grammar::TokenMasker::kMaxMaskWork;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (*end || n == 0) fail("QWEN35_MAX_MASK_WORK=", v, ": expected a positive number of matcher steps");
  return n;
}

}  // namespace

OutputConstraint::OutputConstraint(const EngineImpl& engine, const OutputFormat& format, bool starts_in_thought,
                                   bool split_reasoning)
    : engine_(engine), compiled_(format.kind == OutputFormat::Kind::kNone ? nullptr : format.compiled) {
  if (!compiled_) return;
  matcher_ = std::make_unique<grammar::GrammarMatcher>(compiled_->grammar);
  masker_ = std::make_unique<grammar::TokenMasker>(compiled_->grammar, engine.grammar_vocab(), mask_work_bound());
  bits_.resize(masker_->vocab().words());
  if (split_reasoning) {
    in_thought_ = starts_in_thought;
    think_start_ = engine.think_start_id;
    think_end_ = engine.think_end_id;
  }
  if (compiled_->lazy) {
    triggered_ = false;
    trigger_ = engine.tokenizer->token_to_id(grammar::kToolCallOpen).value_or(-1);
  }
}

void OutputConstraint::mask(float* logits, int64_t n) {
  if (!compiled_) return;
  const float ninf = -std::numeric_limits<float>::infinity();
  if (in_thought_) {
    for (int32_t e : engine_.eos_ids)
      if (e < n) logits[e] = ninf;
    return;
  }
  if (!triggered_) return;
  eos_logits_.clear();
  for (int32_t e : engine_.eos_ids) eos_logits_.push_back(e < n ? logits[e] : ninf);
  masker_->fill(*matcher_, bits_.data());
  grammar::apply_token_mask(bits_.data(), masker_->vocab().vocab_size(), logits, n);
  if (matcher_->can_finish())
    for (size_t i = 0; i < engine_.eos_ids.size(); ++i)
      if (engine_.eos_ids[i] < n) logits[engine_.eos_ids[i]] = eos_logits_[i];
}

void OutputConstraint::observe(int32_t token) {
  if (!compiled_) return;
  if (in_thought_) {
    if (token == think_end_) in_thought_ = false;
    return;
  }
  if (!triggered_) {
    if (token == think_start_ && think_start_ >= 0) {
      in_thought_ = true;
    } else if (token == trigger_) {
      triggered_ = true;
      matcher_->advance(grammar::kToolCallOpen);
    }
    return;
  }
  if (engine_.is_eos(token)) return;
  // A token the mask allowed always advances; anything else (none can be sampled) is left out.
  matcher_->advance(engine_.tokenizer->token_bytes(token));
}

}  // namespace qwen35
