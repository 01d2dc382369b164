// The grammar of Qwen3.5 tool calls, as its chat template asks for them and
// server/openai/tool_calls.cpp reads them back:
//
//   <tool_call>\n<function=NAME>\n<parameter=P>\nVALUE\n</parameter>\n...</function>\n</tool_call>
//
// NAME is one of the offered functions; the parameters follow the order of the function's
// `properties`, required ones always present, no others. A parameter whose schema has type
// "string" is written raw (any text without "</", so it cannot close the tag early; an `enum`
// becomes its raw values); any other is JSON text valid against its schema (json_schema.h).
// Calls are separated by "\n" when `parallel`.
//
// Strictness per function: OpenAI's `function.strict` (default false): when false, schema
// keywords that cannot be enforced are ignored rather than refused, since tool schemas are
// written for models that were never constrained.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "grammar/grammar_ir.h"

namespace qwen35::grammar {

inline constexpr const char* kToolCallOpen = "<tool_call>";

// `tools`: the OpenAI tools array; `only`: the one function to call ("" = any). Throws
// SchemaError (with pointers prefixed by the tool's place) or qwen35::Error.
GrammarIR tool_call_grammar(const nlohmann::ordered_json& tools, const std::string& only, bool parallel);

}  // namespace qwen35::grammar
