// Chat format: every golden conversation rendered byte for byte (goldens from Python Jinja2 on the
// official template), the spec's worked examples, OpenAI-style inputs, the Python formatting rules
// the template depends on, and the `qwen35 render` command.
#include "text/chat_format.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "support/test_data.h"
#include "text/chat_template_check.h"
#include "text/python_format.h"

namespace qwen35 {
namespace {

using json = nlohmann::ordered_json;

std::vector<json> read_jsonl(const std::string& path) {
  std::vector<json> rows;
  std::istringstream in(test::read_text_file(path));
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) rows.push_back(json::parse(line));
  return rows;
}

// Renders a golden row and compares with its "rendered" text, or with its "error" message when the
// template raises. Returns a failure description, empty on success.
std::string check_row(const json& messages, const ChatRenderOptions& opts, const json& row) {
  const std::string id = row.value("id", "?") + " " + row.value("name", "");
  const json& expected = row.at("rendered");
  try {
    const std::string got = render_chat(messages, opts);
    if (expected.is_null()) return id + ": expected error '" + row.value("error", "") + "', rendered:\n" + got;
    if (got != expected.get<std::string>())
      return id + ": render differs\n--- expected\n" + expected.get<std::string>() + "\n--- got\n" + got;
  } catch (const Error& e) {
    if (!expected.is_null()) return id + ": unexpected error: " + e.what();
    if (row.at("error").get<std::string>() != e.what())
      return id + ": error message differs: expected '" + row.at("error").get<std::string>() + "', got '" +
             e.what() + "'";
  }
  return "";
}

// kwargs rows as transformers passes them: add_generation_prompt false when absent.
void check_kwargs_file(const std::string& path, size_t min_rows) {
  const std::vector<json> rows = read_jsonl(path);
  ASSERT_GE(rows.size(), min_rows) << path;
  for (const json& row : rows) {
    const ChatRenderOptions opts = chat_options_from_kwargs(row.at("kwargs"));
    const std::string failure = check_row(row.at("messages"), opts, row);
    EXPECT_TRUE(failure.empty()) << failure;
  }
}

TEST(ChatFormatGolden, VisibleChatCases) {
  check_kwargs_file(test::data_path("tokenizer/golden/visible_chat.jsonl"), 13);
}

TEST(ChatFormatGolden, TinyModelEndToEndCases) {
  const std::vector<json> rows = read_jsonl(test::data_path("tiny-qwen35/golden/chat_e2e.jsonl"));
  ASSERT_GE(rows.size(), 7u);
  for (const json& row : rows) {
    ChatRenderOptions opts = chat_options_from_kwargs(row.at("chat_template_kwargs"));
    opts.add_generation_prompt = row.at("add_generation_prompt").get<bool>();
    const std::string failure = check_row(row.at("messages"), opts, row);
    EXPECT_TRUE(failure.empty()) << failure;
  }
}

// Curated and seeded-random conversations rendered by Jinja2 (chat_format_make_cases.py): tools
// with nested and scalar arguments, OpenAI string arguments, both reasoning forms, tool groups,
// media with and without ids, Unicode whitespace at the ends, and every template error.
TEST(ChatFormatGolden, JinjaOracleCases) {
  const std::string path = std::filesystem::path(__FILE__).parent_path() / "chat_format_cases.jsonl";
  check_kwargs_file(path, 200);
}

// ---- The worked examples of qwen35-model.md section 9 ----

json msg(const char* role, json content) { return {{"role", role}, {"content", std::move(content)}}; }

TEST(ChatFormatSpec, SystemUserThinkingOnAndOff) {
  const json messages = json::array({msg("system", "You are a helpful assistant."), msg("user", "Hello!")});
  ChatRenderOptions opts;
  opts.add_generation_prompt = true;
  EXPECT_EQ(render_chat(messages, opts),
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n"
            "<|im_start|>assistant\n<think>\n");
  opts.enable_thinking = false;
  EXPECT_EQ(render_chat(messages, opts),
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n"
            "<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

TEST(ChatFormatSpec, MultiTurnDropsEarlierThinking) {
  const json messages = json::array({msg("user", "What is 2+2?"),
                                     msg("assistant", "<think>\nSimple arithmetic.\n</think>\n\n2+2 = 4."),
                                     msg("user", "And 3+3?")});
  EXPECT_EQ(render_chat(messages, {.add_generation_prompt = true}),
            "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n2+2 = 4.<|im_end|>\n"
            "<|im_start|>user\nAnd 3+3?<|im_end|>\n<|im_start|>assistant\n<think>\n");
}

TEST(ChatFormatSpec, UserImage) {
  const json parts = json::array({{{"type", "image"}}, {{"type", "text"}, {"text", "Describe this image."}}});
  const json messages = json::array({msg("user", parts)});
  EXPECT_EQ(render_chat(messages, {.add_generation_prompt = true}),
            "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>Describe this image.<|im_end|>\n"
            "<|im_start|>assistant\n<think>\n");
}

const char* kToolInstructions =
    "\n\nIf you choose to call a function ONLY reply in the following format with NO suffix:\n\n<tool_call>\n"
    "<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n</parameter>\n"
    "<parameter=example_parameter_2>\nThis is the value for the second parameter\nthat can span\nmultiple lines\n"
    "</parameter>\n</function>\n</tool_call>\n\n<IMPORTANT>\nReminder:\n- Function calls MUST follow the specified "
    "format: an inner <function=...></function> block must be nested within <tool_call></tool_call> XML tags\n"
    "- Required parameters MUST be specified\n- You may provide optional reasoning for your function call in natural "
    "language BEFORE the function call, but NOT after\n- If there is no function call available, answer the question "
    "like normal with your current knowledge and do not tell the user about function calls\n</IMPORTANT>";

TEST(ChatFormatSpec, ToolDefinitionsCallAndResponse) {
  const json tools = json::parse(
      R"([{"type": "function", "function": {"name": "get_weather", "description": "Get weather.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])");
  const json messages = json::parse(R"([
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": "", "reasoning_content": "Need the tool.",
     "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
    {"role": "tool", "content": "Sunny, 22C"}])");
  ChatRenderOptions opts{.add_generation_prompt = true, .tools = tools};
  EXPECT_EQ(render_chat(messages, opts),
            std::string("<|im_start|>system\n# Tools\n\nYou have access to the following functions:\n\n<tools>\n"
                        "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Get "
                        "weather.\", \"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": "
                        "\"string\"}}, \"required\": [\"city\"]}}}\n</tools>") +
                kToolInstructions +
                "\n\nBe brief.<|im_end|>\n<|im_start|>user\nWeather in Paris?<|im_end|>\n"
                "<|im_start|>assistant\n<think>\nNeed the tool.\n</think>\n\n<tool_call>\n<function=get_weather>\n"
                "<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call><|im_end|>\n"
                "<|im_start|>user\n<tool_response>\nSunny, 22C\n</tool_response><|im_end|>\n"
                "<|im_start|>assistant\n<think>\n");
}

// ---- OpenAI-style inputs and error reporting ----

std::string render_error(const json& messages, const ChatRenderOptions& opts = {}) {
  try {
    render_chat(messages, opts);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ChatFormatOpenAI, ImageUrlPartsAndStringArguments) {
  const json messages = json::parse(R"([
    {"role": "user", "content": [{"type": "text", "text": "What is here? "},
                                 {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]},
    {"role": "assistant", "content": null, "tool_calls": [
      {"id": "call_0", "type": "function", "function": {"name": "lookup",
       "arguments": "{\"q\": \"cat\", \"n\": 2, \"min\": 0.5, \"exact\": true, \"opts\": {\"a\": [1, 2.0]}}"}}]},
    {"role": "tool", "tool_call_id": "call_0", "content": "a cat"}])");
  EXPECT_EQ(render_chat(messages, {.add_generation_prompt = true, .add_vision_id = true}),
            "<|im_start|>user\nWhat is here? Picture 1: <|vision_start|><|image_pad|><|vision_end|><|im_end|>\n"
            "<|im_start|>assistant\n<think>\n\n</think>\n\n<tool_call>\n<function=lookup>\n"
            "<parameter=q>\ncat\n</parameter>\n<parameter=n>\n2\n</parameter>\n<parameter=min>\n0.5\n</parameter>\n"
            "<parameter=exact>\nTrue\n</parameter>\n<parameter=opts>\n{\"a\": [1, 2.0]}\n</parameter>\n"
            "</function>\n</tool_call><|im_end|>\n"
            "<|im_start|>user\n<tool_response>\na cat\n</tool_response><|im_end|>\n"
            "<|im_start|>assistant\n<think>\n");
}

TEST(ChatFormatOpenAI, EmptyArgumentsAreAnEmptyMapping) {
  const json with_empty = json::parse(
      R"([{"role": "user", "content": "x"}, {"role": "assistant", "content": "",
           "tool_calls": [{"name": "f", "arguments": ""}, {"name": "g", "arguments": null}]}])");
  EXPECT_EQ(render_chat(with_empty, {}),
            "<|im_start|>user\nx<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
            "<tool_call>\n<function=f>\n</function>\n</tool_call>\n<tool_call>\n<function=g>\n</function>\n</tool_call>"
            "<|im_end|>\n");
}

TEST(ChatFormatOpenAI, ArgumentsThatAreNotAMappingAreAClearError) {
  for (const char* args : {R"("not json")", R"("[1, 2]")", R"("{\"a\": ")", "[1, 2]", "42"}) {
    const json messages = json::parse(std::string(R"([{"role": "user", "content": "x"}, {"role": "assistant",
        "content": "", "tool_calls": [{"function": {"name": "f", "arguments": )") + args + "}}]}]");
    const std::string error = render_error(messages);
    EXPECT_NE(error.find("arguments of tool call 'f' must be a JSON object"), std::string::npos)
        << args << ": " << error;
  }
  const json nameless = json::parse(R"([{"role": "user", "content": "x"},
      {"role": "assistant", "content": "", "tool_calls": [{"function": {"arguments": {}}}]}])");
  EXPECT_NE(render_error(nameless).find("no function name"), std::string::npos);
}

TEST(ChatFormatOpenAI, TemplateErrorsCarryTheTemplateMessage) {
  EXPECT_EQ(render_error(json::array()), "No messages provided.");
  EXPECT_EQ(render_error(json::array({msg("system", "s")})), "No user query found in messages.");
  EXPECT_EQ(render_error(json::array({msg("user", "<tool_response>\nx\n</tool_response>")})),
            "No user query found in messages.");
  EXPECT_EQ(render_error(json::array({msg("user", "u"), msg("system", "s")})),
            "System message must be at the beginning.");
  const json image_url = {{"type", "image_url"}, {"image_url", {{"url", "u"}}}};
  EXPECT_EQ(render_error(json::array({msg("system", json::array({image_url})),
                                      msg("user", "u")})),
            "System message cannot contain images.");
  EXPECT_EQ(render_error(json::array({msg("system", json::array({{{"type", "video"}}})), msg("user", "u")})),
            "System message cannot contain videos.");
  EXPECT_EQ(render_error(json::array({msg("user", "u"), msg("function", "f")})), "Unexpected message role.");
  EXPECT_EQ(render_error(json::array({msg("user", json::array({{{"type", "input_audio"}}}))})),
            "Unexpected item type in content.");
  EXPECT_EQ(render_error(json::array({msg("user", 42)})), "Unexpected content type.");
}

TEST(ChatFormatOptions, KwargsFollowJinjaTruthiness) {
  const ChatRenderOptions a =
      chat_options_from_kwargs(json::parse(R"({"enable_thinking": 0, "add_vision_id": "yes"})"));
  EXPECT_TRUE(a.enable_thinking);  // the template tests `is false`: only a real false turns thinking off
  EXPECT_TRUE(a.add_vision_id);
  EXPECT_FALSE(a.add_generation_prompt);
  const ChatRenderOptions b = chat_options_from_kwargs(
      json::parse(R"({"enable_thinking": false, "add_generation_prompt": 1, "tools": [{"name": "t"}], "other": 1})"));
  EXPECT_FALSE(b.enable_thinking);
  EXPECT_TRUE(b.add_generation_prompt);
  EXPECT_EQ(b.tools.size(), 1u);
  EXPECT_THROW(chat_options_from_kwargs(json::array()), Error);
}

// ---- Helpers for the runtime ----

TEST(ChatFormatHelpers, GenerationPromptIsTheRenderedSuffix) {
  const json messages = json::array({msg("user", "hi")});
  for (bool thinking : {true, false}) {
    const std::string with = render_chat(messages, {.add_generation_prompt = true, .enable_thinking = thinking});
    const std::string without = render_chat(messages, {.enable_thinking = thinking});
    EXPECT_EQ(with, without + std::string(generation_prompt(thinking)));
  }
  EXPECT_EQ(generation_prompt(true), "<|im_start|>assistant\n<think>\n");
  EXPECT_EQ(generation_prompt(false), "<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

TEST(ChatFormatHelpers, ReplyRoundTripsThroughTheTemplate) {
  // What the model wrote after "<think>\n": its reasoning, the closing tag, the answer.
  const AssistantReply reply = split_reasoning("Let me think.\nStill thinking.\n</think>\n\nThe answer is 4.");
  EXPECT_EQ(reply.reasoning, "Let me think.\nStill thinking.");
  EXPECT_EQ(reply.content, "The answer is 4.");
  EXPECT_EQ(split_reasoning("cut short", true).reasoning, "cut short");
  EXPECT_EQ(split_reasoning("plain answer", false).content, "plain answer");

  const json prompt = json::array({msg("user", "2+2?")});
  json history = prompt;
  history.push_back(assistant_message(reply.reasoning, reply.content));
  // Right after the query the turn renders exactly as generated: prompt + generated text + <|im_end|>.
  EXPECT_EQ(render_chat(history, {}),
            render_chat(prompt, {.add_generation_prompt = true}) +
                "Let me think.\nStill thinking.\n</think>\n\nThe answer is 4.<|im_end|>\n");
  const json with_calls = assistant_message("", "x", json::parse(R"([{"name": "f", "arguments": {}}])"));
  EXPECT_EQ(with_calls.at("tool_calls").size(), 1u);
  // A "</think>" the model wrote in its answer is not re-split: reasoning_content is always set.
  json literal = prompt;
  literal.push_back(assistant_message("r", "use </think> to close"));
  EXPECT_NE(render_chat(literal, {}).find("<think>\nr\n</think>\n\nuse </think> to close"), std::string::npos);
}

// ---- Python formatting (what |string, |tojson and |trim produce) ----

TEST(ChatPythonFormat, FloatReprMatchesPython) {
  const std::vector<std::pair<double, const char*>> cases = {
      {0.0, "0.0"}, {-0.0, "-0.0"}, {1.0, "1.0"}, {2.0, "2.0"}, {100.0, "100.0"}, {0.1, "0.1"}, {1.5, "1.5"},
      {1e-05, "1e-05"}, {0.0001, "0.0001"}, {0.00012, "0.00012"}, {1.2e-05, "1.2e-05"}, {1e16, "1e+16"},
      {1e15, "1000000000000000.0"}, {9999999999999998.0, "9999999999999998.0"}, {1.5e16, "1.5e+16"},
      {123456789012345.6, "123456789012345.6"}, {0.30000000000000004, "0.30000000000000004"}, {1e22, "1e+22"},
      {1.7976931348623157e308, "1.7976931348623157e+308"}, {5e-324, "5e-324"}, {2.5e-08, "2.5e-08"},
      {-7.25, "-7.25"}, {1e100, "1e+100"}, {3.141592653589793, "3.141592653589793"},
      {1234567890123456789.0, "1.2345678901234568e+18"},
      {std::numeric_limits<double>::infinity(), "inf"}, {-std::numeric_limits<double>::infinity(), "-inf"},
      {std::nan(""), "nan"}};
  for (const auto& [value, expected] : cases) EXPECT_EQ(py::float_repr(value), expected) << expected;
}

TEST(ChatPythonFormat, StrOfScalarsAndContainers) {
  EXPECT_EQ(py::str(json(true)), "True");
  EXPECT_EQ(py::str(json(false)), "False");
  EXPECT_EQ(py::str(json(nullptr)), "None");
  EXPECT_EQ(py::str(json(3)), "3");
  EXPECT_EQ(py::str(json(-3)), "-3");
  EXPECT_EQ(py::str(json(18446744073709551615ull)), "18446744073709551615");
  EXPECT_EQ(py::str(json::parse("2.0")), "2.0");
  EXPECT_EQ(py::str(json::parse("1E5")), "100000.0");
  EXPECT_EQ(py::str(json("raw \"text\"\n")), "raw \"text\"\n");
  EXPECT_EQ(py::str(json::parse(R"({"a": [1, "x", null, true, 0.5], "b'": "it's"})")),
            R"({'a': [1, 'x', None, True, 0.5], "b'": "it's"})");
}

TEST(ChatPythonFormat, ReprOfStringsEscapesAsPython) {
  EXPECT_EQ(py::repr_string("plain"), "'plain'");
  EXPECT_EQ(py::repr_string("it's"), "\"it's\"");
  EXPECT_EQ(py::repr_string("both ' and \""), "'both \\' and \"'");
  EXPECT_EQ(py::repr_string("tab\tnl\ncr\rbs\\"), "'tab\\tnl\\ncr\\rbs\\\\'");
  EXPECT_EQ(py::repr_string(std::string("\x01\x7f", 2)), "'\\x01\\x7f'");
  EXPECT_EQ(py::repr_string("caf\u00e9 \u6771 \U0001F680"), "'caf\u00e9 \u6771 \U0001F680'");
  EXPECT_EQ(py::repr_string("\u00a0\u0085\u200b\u2028\U000E0001"), "'\\xa0\\x85\\u200b\\u2028\\U000e0001'");
}

TEST(ChatPythonFormat, JsonDumpsMatchesPython) {
  EXPECT_EQ(py::json_dumps(
                json::parse(R"({"b": 1, "a": [1.0, 1e-05, 1e16, true, null, "é\u2028"], "c": {}, "d": []})")),
            "{\"b\": 1, \"a\": [1.0, 1e-05, 1e+16, true, null, \"é\u2028\"], \"c\": {}, \"d\": []}");
  EXPECT_EQ(py::json_dumps(json("q\"\\\b\f\n\r\t\x01\x1f\x7f")), "\"q\\\"\\\\\\b\\f\\n\\r\\t\\u0001\\u001f\x7f\"");
  EXPECT_EQ(py::json_dumps(json(std::nan(""))), "NaN");
  EXPECT_EQ(py::json_dumps(json(-std::numeric_limits<double>::infinity())), "-Infinity");
}

TEST(ChatPythonFormat, StripUsesPythonWhitespace) {
  EXPECT_EQ(py::strip(" \t\n\v\f\r\x1c\x1d\x1e\x1fx y\u3000\u00a0\u0085\u1680\u2000\u200a\u2028\u2029\u202f\u205f"),
            "x y");
  EXPECT_EQ(py::strip("\u200bx\u200b"), "\u200bx\u200b");  // zero-width space is not whitespace
  EXPECT_EQ(py::strip("\u180ex"), "\u180ex");               // nor the Mongolian vowel separator (Unicode >= 6.3)
  EXPECT_EQ(py::strip("   "), "");
  EXPECT_EQ(py::strip("é"), "é");
  EXPECT_EQ(py::lstrip_chars("\n\n x\n", "\n"), " x\n");
  EXPECT_EQ(py::rstrip_chars("\n x\n\n", "\n"), "\n x");
}

// ---- Which template a model ships ----

TEST(ChatTemplateCheck, Sha256AcrossPaddingBoundaries) {
  const std::vector<std::pair<size_t, const char*>> cases = {
      {0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
      {55, "595615dbe4f0f407ae397d08b4c2cb870cb9b0e11937416f950c5160acf9c005"},
      {56, "784f623b787495078e93ff28a25b581df0584055a7e71d8cd90c454716b92f51"},
      {63, "5ca3e1ef5207490eac01a795e5cc94d59582a5118bf9534665c8668d87aa647c"},
      {64, "2fcd5a0d60e4c941381fcc4e00a4bf8be422c3ddfafb93c809e8d1e2bfffae8e"},
      {65, "1b3cd1877ab2f2f19f7be001722554f336cb799df0329de0bb4c118dc6abc06d"},
      {119, "faef67da856d6fd9c8d12f9ed0a4fefd3cf0ce085ab43e2907418d457e3c354b"},
      {120, "c9512b08619c19fbb503c7da6b46ef20301e5f7a7a5f43989182398536f5c5c8"},
      {1000, "915e53a44c18b19bb06ba5b3f5fcaf1dc4651e8404c63425cfc6174e74659d87"}};
  for (const auto& [n, expected] : cases) {
    std::string text;
    for (size_t i = 0; i < n; ++i) text += char('a' + i % 26);
    EXPECT_EQ(sha256_hex(text), expected) << n;
  }
}

TEST(ChatTemplateCheck, FindsTheModelTemplate) {
  const std::optional<ModelChatTemplate> bundled = read_model_chat_template(test::tiny_model_dir());
  ASSERT_TRUE(bundled);
  EXPECT_TRUE(bundled->source.ends_with("chat_template.jinja"));
  EXPECT_EQ(sha256_hex(bundled->text), kQwen35ChatTemplateSha256);
  EXPECT_TRUE(is_qwen35_chat_template(bundled->text + "\n"));
  EXPECT_FALSE(is_qwen35_chat_template(bundled->text + "x"));
  EXPECT_FALSE(is_qwen35_chat_template(bundled->text.substr(1)));

  // Without chat_template.jinja the template embedded in tokenizer_config.json is used.
  const std::string dir = test::temp_dir("chat-template-config");
  std::filesystem::copy_file(test::tiny_model_dir() + "/tokenizer_config.json", dir + "/tokenizer_config.json");
  const std::optional<ModelChatTemplate> embedded = read_model_chat_template(dir);
  ASSERT_TRUE(embedded);
  EXPECT_TRUE(embedded->source.ends_with("tokenizer_config.json"));
  EXPECT_TRUE(is_qwen35_chat_template(embedded->text));
  EXPECT_FALSE(read_model_chat_template(test::temp_dir("chat-template-none")));
}

TEST(ChatTemplateCheck, NamesTheFirstDifferenceFromTheOfficialTemplate) {
  const std::string official(qwen35_chat_template());
  EXPECT_EQ(sha256_hex(official), kQwen35ChatTemplateSha256);
  EXPECT_EQ(describe_template_difference(official), "");
  std::string edited = official;
  const size_t line3 = edited.find('\n', edited.find('\n') + 1) + 1;  // start of line 3
  edited.insert(line3, "{#- a community fix -#}");
  const std::string d = describe_template_difference(edited);
  EXPECT_NE(d.find("line 3 has '{#- a community fix -#}"), std::string::npos) << d;
  const std::string first_two = official.substr(0, official.find('\n', official.find('\n') + 1) + 1);
  EXPECT_NE(describe_template_difference(first_two).find("line 3 has ''"), std::string::npos);
  EXPECT_NE(describe_template_difference(first_two.substr(0, first_two.size() - 1)).find("ends at line 3"), std::string::npos);
  EXPECT_NE(describe_template_difference(official + "\nextra").find("past the end"), std::string::npos);

  // The warning given at start: none for the bundled model, one naming the line for an edited copy.
  EXPECT_EQ(chat_template_warning(test::tiny_model_dir()), "");
  const std::string dir = test::temp_dir("chat-template-edited");
  std::ofstream(dir + "/chat_template.jinja", std::ios::binary) << edited;
  const std::string w = chat_template_warning(dir);
  EXPECT_NE(w.find("not the official Qwen3.5 template"), std::string::npos) << w;
  EXPECT_NE(w.find("line 3"), std::string::npos) << w;
  EXPECT_NE(chat_template_warning(test::temp_dir("chat-template-none")).find("has no chat template"), std::string::npos);
}

// ---- qwen35 render ----

struct CliResult {
  int code;
  std::string out;
  std::string err;
};

CliResult run_render(const std::string& dir, const std::string& args) {
  const std::string out = dir + "/stdout", err = dir + "/stderr";
  const int status = std::system((test::cli_binary() + " render " + args + " >" + out + " 2>" + err).c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, test::read_text_file(out), test::read_text_file(err)};
}

void write_file(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

TEST(ChatRenderCli, RendersGoldenConversationsExactly) {
  const std::string dir = test::temp_dir("chat-render");
  const std::vector<json> rows = read_jsonl(test::data_path("tokenizer/golden/visible_chat.jsonl"));
  for (const json& row : rows) {
    if (row.at("rendered").is_null()) continue;
    json kwargs = row.at("kwargs");
    std::string args = "-m " + test::tiny_model_dir() + " --messages " + dir + "/m.json";
    if (kwargs.contains("tools")) {
      write_file(dir + "/tools.json", kwargs.at("tools").dump());
      kwargs.erase("tools");
      args += " --tools " + dir + "/tools.json";
    }
    if (!kwargs.value("add_generation_prompt", false)) args += " --no-generation-prompt";
    kwargs.erase("add_generation_prompt");
    write_file(dir + "/m.json", row.at("messages").dump());
    write_file(dir + "/kwargs.json", kwargs.dump());
    const CliResult r = run_render(dir, args + " --kwargs \"$(cat " + dir + "/kwargs.json)\"");
    EXPECT_EQ(r.code, 0) << row.at("id") << " " << r.err;
    EXPECT_EQ(r.out, row.at("rendered").get<std::string>()) << row.at("id");
    EXPECT_EQ(r.err, "") << row.at("id");
  }
}

TEST(ChatRenderCli, MessagesObjectWithToolsAndErrors) {
  const std::string dir = test::temp_dir("chat-render-errors");
  const std::string model = " -m " + test::tiny_model_dir();
  write_file(dir + "/obj.json", R"({"messages": [{"role": "user", "content": "hi"}], "tools": [{"name": "t"}]})");
  CliResult r = run_render(dir, model + " --messages " + dir + "/obj.json --kwargs '{\"enable_thinking\": false}'");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, 21), "<|im_start|>system\n# ");
  EXPECT_NE(r.out.find("<tools>\n{\"name\": \"t\"}\n</tools>"), std::string::npos);
  EXPECT_TRUE(r.out.ends_with("<|im_start|>assistant\n<think>\n\n</think>\n\n")) << r.out;

  write_file(dir + "/late.json", R"([{"role": "user", "content": "hi"}, {"role": "system", "content": "s"}])");
  r = run_render(dir, model + " --messages " + dir + "/late.json");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("System message must be at the beginning."), std::string::npos) << r.err;

  const auto bundled = run_render(dir, "--messages " + dir + "/obj.json");  // no -m: the bundled tiny model
  EXPECT_EQ(bundled.code, 0) << bundled.err;
  EXPECT_NE(bundled.err.find("bundled tiny test model"), std::string::npos) << bundled.err;
  EXPECT_EQ(run_render(dir, model).code, 2);                             // no --messages
  EXPECT_EQ(run_render(dir, model + " --messages " + dir + "/missing.json").code, 2);
  EXPECT_EQ(run_render(dir, model + " --messages " + dir + "/obj.json --kwargs '[1]'").code, 2);
  EXPECT_EQ(run_render(dir, model + " --messages " + dir + "/obj.json --bogus").code, 2);
  write_file(dir + "/bad.json", "[{");
  EXPECT_EQ(run_render(dir, model + " --messages " + dir + "/bad.json").code, 2);
}

TEST(ChatRenderCli, WarnsWhenTheModelTemplateDiffers) {
  const std::string dir = test::temp_dir("chat-render-template");
  const std::string model = dir + "/model";
  std::filesystem::create_directories(model);
  write_file(model + "/chat_template.jinja", "{{ messages }}");
  write_file(dir + "/m.json", R"([{"role": "user", "content": "hi"}])");
  CliResult r = run_render(dir, "-m " + model + " --messages " + dir + "/m.json");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n");
  EXPECT_NE(r.err.find("warning"), std::string::npos) << r.err;

  // The official template with a trailing newline and CRLF line ends is still recognised.
  std::string official = test::read_text_file(test::tiny_model_dir() + "/chat_template.jinja");
  std::string crlf;
  for (char c : official) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  write_file(model + "/chat_template.jinja", crlf + "\r\n");
  r = run_render(dir, "-m " + model + " --messages " + dir + "/m.json");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.err, "");
}

}  // namespace
}  // namespace qwen35
