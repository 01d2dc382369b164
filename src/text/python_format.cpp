#include "text/python_format.h"

#include <unicode/uchar.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>

namespace qwen35::py {

namespace {

using json = nlohmann::ordered_json;

// One code point of UTF-8 starting at s[i]; a malformed byte decodes as itself with length 1 so
// callers never loop forever on bad input (request JSON is validated UTF-8 anyway).
struct Decoded {
  char32_t cp;
  size_t len;
};

Decoded decode_at(std::string_view s, size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return {b0, 1};
  size_t len = b0 >= 0xF0 ? 4 : b0 >= 0xE0 ? 3 : b0 >= 0xC0 ? 2 : 0;
  if (len == 0 || i + len > s.size()) return {b0, 1};
  char32_t cp = b0 & (0x7F >> len);
  for (size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return {b0, 1};
    cp = (cp << 6) | (b & 0x3F);
  }
  return {cp, len};
}

// Start of the code point that ends at s[end - 1].
size_t start_of_last(std::string_view s, size_t end) {
  size_t i = end - 1;
  for (size_t back = 0; back < 3 && i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80; ++back) --i;
  if (decode_at(s, i).len != end - i) return end - 1;  // not a well-formed sequence: one byte
  return i;
}

void append_hex(std::string& out, const char* prefix, uint32_t value, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%s%0*x", prefix, digits, value);
  out += buf;
}

// Python's str.isprintable() for one code point: everything except categories C* and Z*, but
// the ASCII space is printable.
bool is_printable(char32_t cp) {
  if (cp == U' ') return true;
  switch (u_charType(static_cast<UChar32>(cp))) {
    case U_CONTROL_CHAR:
    case U_FORMAT_CHAR:
    case U_SURROGATE:
    case U_PRIVATE_USE_CHAR:
    case U_UNASSIGNED:
    case U_SPACE_SEPARATOR:
    case U_LINE_SEPARATOR:
    case U_PARAGRAPH_SEPARATOR:
      return false;
    default:
      return true;
  }
}

void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  for (char c : s) {
    const auto b = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (b < 0x20) append_hex(out, "\\u", b, 4);
        else out += c;  // ensure_ascii=False: everything else, DEL and U+2028 included, stays raw
    }
  }
  out += '"';
}

std::string number_str(const json& v, bool json_spelling) {
  if (v.is_number_integer()) return v.is_number_unsigned() ? std::to_string(v.get<uint64_t>())
                                                           : std::to_string(v.get<int64_t>());
  const double d = v.get<double>();
  if (std::isnan(d)) return json_spelling ? "NaN" : "nan";
  if (std::isinf(d)) return json_spelling ? (d < 0 ? "-Infinity" : "Infinity") : (d < 0 ? "-inf" : "inf");
  return float_repr(d);
}

void append_json(std::string& out, const json& v) {
  switch (v.type()) {
    case json::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, item] : v.items()) {
        if (!first) out += ", ";
        first = false;
        append_json_string(out, key);
        out += ": ";
        append_json(out, item);
      }
      out += '}';
      break;
    }
    case json::value_t::array: {
      out += '[';
      for (size_t i = 0; i < v.size(); ++i) {
        if (i) out += ", ";
        append_json(out, v[i]);
      }
      out += ']';
      break;
    }
    case json::value_t::string: append_json_string(out, v.get_ref<const std::string&>()); break;
    case json::value_t::boolean: out += v.get<bool>() ? "true" : "false"; break;
    case json::value_t::null:
    case json::value_t::discarded: out += "null"; break;
    case json::value_t::binary: out += "null"; break;  // never produced by parsing JSON text
    default: out += number_str(v, true);
  }
}

void append_repr(std::string& out, const json& v) {
  switch (v.type()) {
    case json::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, item] : v.items()) {
        if (!first) out += ", ";
        first = false;
        out += repr_string(key);
        out += ": ";
        append_repr(out, item);
      }
      out += '}';
      break;
    }
    case json::value_t::array: {
      out += '[';
      for (size_t i = 0; i < v.size(); ++i) {
        if (i) out += ", ";
        append_repr(out, v[i]);
      }
      out += ']';
      break;
    }
    case json::value_t::string: out += repr_string(v.get_ref<const std::string&>()); break;
    default: out += str(v);
  }
}

}  // namespace

std::string float_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";

  // to_chars without a precision gives the shortest round-trip digits (ties resolved towards the
  // exact value), the same digits as Python's repr; only the layout differs.
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);
  const std::string_view sci(buf, size_t(res.ptr - buf));  // "-d.ddde-XX"
  const size_t e_pos = sci.find('e');
  std::string digits;
  bool negative = false;
  for (char c : sci.substr(0, e_pos)) {
    if (c == '-') negative = true;
    else if (c != '.') digits += c;
  }
  int exp10 = 0;
  std::from_chars(sci.data() + e_pos + 1 + (sci[e_pos + 1] == '+'), sci.data() + sci.size(), exp10);
  const int point = exp10 + 1;  // value = 0.DIGITS * 10^point
  const int n = int(digits.size());

  std::string out = negative ? "-" : "";
  if (point > -4 && point <= 16) {
    if (point <= 0) {
      out.append("0.").append(size_t(-point), '0').append(digits);
    } else if (point >= n) {
      out.append(digits).append(size_t(point - n), '0').append(".0");
    } else {
      out.append(digits, 0, size_t(point)).append(".").append(digits, size_t(point));
    }
    return out;
  }
  out += digits[0];
  if (n > 1) out.append(".").append(digits, 1);
  const int e = point - 1;
  char ebuf[16];
  std::snprintf(ebuf, sizeof ebuf, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
  return out + ebuf;
}

std::string json_dumps(const json& value) {
  std::string out;
  append_json(out, value);
  return out;
}

std::string str(const json& value) {
  switch (value.type()) {
    case json::value_t::string: return value.get<std::string>();
    case json::value_t::boolean: return value.get<bool>() ? "True" : "False";
    case json::value_t::null:
    case json::value_t::discarded: return "None";
    case json::value_t::object:
    case json::value_t::array: {
      std::string out;
      append_repr(out, value);
      return out;
    }
    case json::value_t::binary: return "None";
    default: return number_str(value, false);
  }
}

std::string repr(const json& value) {
  std::string out;
  append_repr(out, value);
  return out;
}

std::string repr_string(std::string_view s) {
  // Python prefers single quotes and switches to double quotes only to avoid escaping a '.
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (size_t i = 0; i < s.size();) {
    const Decoded d = decode_at(s, i);
    const char32_t cp = d.cp;
    if (cp == U'\\') out += "\\\\";
    else if (cp == char32_t(quote)) out += std::string("\\") + quote;
    else if (cp == U'\t') out += "\\t";
    else if (cp == U'\n') out += "\\n";
    else if (cp == U'\r') out += "\\r";
    else if (cp < 0x20 || cp == 0x7F) append_hex(out, "\\x", cp, 2);
    else if (cp < 0x7F || is_printable(cp)) out.append(s.substr(i, d.len));
    else if (cp <= 0xFF) append_hex(out, "\\x", cp, 2);
    else if (cp <= 0xFFFF) append_hex(out, "\\u", cp, 4);
    else append_hex(out, "\\U", cp, 8);
    i += d.len;
  }
  out += quote;
  return out;
}

bool is_space(char32_t cp) {
  if (cp < 0x80) return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20);
  switch (cp) {
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

std::string_view lstrip(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const Decoded d = decode_at(s, i);
    if (!is_space(d.cp)) break;
    i += d.len;
  }
  return s.substr(i);
}

std::string_view rstrip(std::string_view s) {
  size_t end = s.size();
  while (end > 0) {
    const size_t start = start_of_last(s, end);
    if (!is_space(decode_at(s, start).cp)) break;
    end = start;
  }
  return s.substr(0, end);
}

std::string_view strip(std::string_view s) { return rstrip(lstrip(s)); }

std::string_view lstrip_chars(std::string_view s, std::string_view chars) {
  const size_t i = s.find_first_not_of(chars);
  return i == std::string_view::npos ? std::string_view() : s.substr(i);
}

std::string_view rstrip_chars(std::string_view s, std::string_view chars) {
  const size_t i = s.find_last_not_of(chars);
  return i == std::string_view::npos ? std::string_view() : s.substr(0, i + 1);
}

bool truthy(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
    case json::value_t::discarded: return false;
    case json::value_t::boolean: return v.get<bool>();
    case json::value_t::number_integer: return v.get<int64_t>() != 0;
    case json::value_t::number_unsigned: return v.get<uint64_t>() != 0;
    case json::value_t::number_float: return v.get<double>() != 0.0;
    case json::value_t::string: return !v.get_ref<const std::string&>().empty();
    case json::value_t::array:
    case json::value_t::object: return !v.empty();
    case json::value_t::binary: return !v.get_binary().empty();
  }
  return false;
}

}  // namespace qwen35::py
