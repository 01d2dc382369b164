// Unicode services backed by ICU: normalization forms and code point sets by property.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qwen35::unicode {

enum class NormalForm { kNone, kNFC, kNFD, kNFKC, kNFKD };

// Appends the normalized form of `text` (well-formed UTF-8) to `out`. kNone appends it unchanged.
// Thread-safe (ICU's Normalizer2 instances are immutable singletons).
void normalize(NormalForm form, std::string_view text, std::string& out);

// True when normalize() would return `text` unchanged; cheap for the common already-NFC case.
bool is_normalized(NormalForm form, std::string_view text);

// Inclusive code point ranges of an ICU set expression such as "[:White_Space:]" or
// "[[:L:]-[:Age=14.0:]]". Throws qwen35::Error when ICU rejects the expression.
std::vector<std::pair<char32_t, char32_t>> ranges_of_set(std::string_view icu_set_pattern);

// Unicode White_Space (what Oniguruma's \s matches in UTF-8 mode, and Rust's char::is_whitespace).
bool is_white_space(char32_t cp);
// Letters, marks, decimal digits and connector punctuation: Oniguruma's \w, used for the
// single_word option of added tokens.
bool is_word_char(char32_t cp);

// The Unicode version of the linked ICU, e.g. "15.0".
std::string icu_unicode_version();

}  // namespace qwen35::unicode
