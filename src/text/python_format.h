// Python's spelling of JSON values, as the chat template's Jinja2 host produces it. The Qwen3.5
// template was written against Python: `|string` is str(), `|tojson` is json.dumps(ensure_ascii=False),
// `|trim` is str.strip(). Reproducing a prompt byte for byte means reproducing those three.
//
// Values are nlohmann::ordered_json as parsed from the request, which keeps what Python's json.loads
// keeps: key order, and int vs float (2.0 stays a float and prints "2.0").
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace qwen35::py {

// repr(float) / str(float): shortest digits that round-trip, fixed notation while the decimal
// exponent is in [-4, 16), otherwise d.ddde±XX ("1e-05", "1e+16", "0.1", "100.0", "-0.0", "inf", "nan").
std::string float_repr(double value);

// json.dumps(value, ensure_ascii=False): ", " and ": " separators, key order kept, non-ASCII raw,
// control characters as \uXXXX, floats as float_repr, NaN/Infinity spelled as Python does.
std::string json_dumps(const nlohmann::ordered_json& value);

// str(value) of the Python object json.loads would give: strings raw, True/False/None, numbers as
// above, dicts and lists as their repr ("{'a': [1, 'x']}").
std::string str(const nlohmann::ordered_json& value);

// repr(value): like str() but strings are quoted and escaped as Python does.
std::string repr(const nlohmann::ordered_json& value);
std::string repr_string(std::string_view utf8);

// Python str.isspace() for one code point (Unicode White_Space plus the \x1c-\x1f separators).
bool is_space(char32_t cp);

// str.strip() / lstrip() / rstrip() with no argument: Unicode whitespace at the ends.
std::string_view strip(std::string_view utf8);
std::string_view lstrip(std::string_view utf8);
std::string_view rstrip(std::string_view utf8);

// str.lstrip(chars) / rstrip(chars) for ASCII character sets (the template uses '\n').
std::string_view lstrip_chars(std::string_view s, std::string_view chars);
std::string_view rstrip_chars(std::string_view s, std::string_view chars);

// Jinja2/Python truthiness of a value: null, false, 0, 0.0, "", [] and {} are false.
bool truthy(const nlohmann::ordered_json& value);

}  // namespace qwen35::py
