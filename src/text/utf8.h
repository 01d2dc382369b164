// UTF-8 helpers shared by the tokenizer, the decoders and the input sanitizer.
//
// Invalid input is handled the way Rust's String::from_utf8_lossy does it (the reference tokenizer
// decodes through it): each *maximal subpart* of an ill-formed sequence becomes one U+FFFD
// (Unicode 15, section 3.9, "U+FFFD Substitution of Maximal Subparts"). So ED A0 80 (a UTF-16
// surrogate spelled in UTF-8) is three U+FFFD, C0 80 (overlong NUL) is two, and F0 9F 98 (an emoji
// cut short) is one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace qwen35::utf8 {

inline constexpr char32_t kReplacement = 0xFFFD;
inline constexpr std::string_view kReplacementUtf8 = "\xEF\xBF\xBD";

// Appends the UTF-8 encoding of `cp` (must be a scalar value: <= 0x10FFFF, not a surrogate).
void append(std::string& out, char32_t cp);

// Length in bytes of the well-formed sequence starting at s[0], or 0 when the bytes there are not a
// complete well-formed sequence (ill-formed, or cut off by the end of `s`). Decodes into *cp.
size_t decode(std::string_view s, char32_t* cp);

// Length of the maximal subpart starting at s[0] when decode() returned 0: the longest prefix that
// could still begin a well-formed sequence, at least 1. One U+FFFD replaces exactly these bytes.
size_t maximal_subpart(std::string_view s);

// True when `s` is entirely well-formed UTF-8.
bool is_valid(std::string_view s);

// Appends `bytes` to `out`, replacing every maximal ill-formed subpart with U+FFFD.
void append_lossy(std::string& out, std::string_view bytes);

// The number of bytes at the end of `bytes` that form a proper prefix of a well-formed sequence
// (0-3): bytes that a later chunk may still complete, so a streaming decoder must hold them back.
size_t incomplete_tail(std::string_view bytes);

}  // namespace qwen35::utf8
