#include "text/unicode.h"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/uniset.h>
#include <unicode/unistr.h>

#include "core/error.h"

namespace qwen35::unicode {

namespace {

const icu::Normalizer2* instance(NormalForm form) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* n = nullptr;
  switch (form) {
    case NormalForm::kNone: return nullptr;
    case NormalForm::kNFC: n = icu::Normalizer2::getNFCInstance(status); break;
    case NormalForm::kNFD: n = icu::Normalizer2::getNFDInstance(status); break;
    case NormalForm::kNFKC: n = icu::Normalizer2::getNFKCInstance(status); break;
    case NormalForm::kNFKD: n = icu::Normalizer2::getNFKDInstance(status); break;
  }
  if (U_FAILURE(status) || !n) fail("ICU normalizer unavailable: ", u_errorName(status));
  return n;
}

bool is_ascii(std::string_view text) {
  for (char c : text)
    if (uint8_t(c) >= 0x80) return false;
  return true;
}

}  // namespace

void normalize(NormalForm form, std::string_view text, std::string& out) {
  // ASCII is invariant under all four forms; skipping ICU here is most of the speed.
  if (form == NormalForm::kNone || is_ascii(text)) {
    out.append(text);
    return;
  }
  const icu::Normalizer2* n = instance(form);
  UErrorCode status = U_ZERO_ERROR;
  icu::StringByteSink<std::string> sink(&out, int32_t(text.size()));
  n->normalizeUTF8(0, icu::StringPiece(text.data(), int32_t(text.size())), sink, nullptr, status);
  if (U_FAILURE(status)) fail("Unicode normalization failed: ", u_errorName(status));
}

bool is_normalized(NormalForm form, std::string_view text) {
  if (form == NormalForm::kNone || is_ascii(text)) return true;
  UErrorCode status = U_ZERO_ERROR;
  bool yes = instance(form)->isNormalizedUTF8(icu::StringPiece(text.data(), int32_t(text.size())), status);
  return U_SUCCESS(status) && yes;
}

std::vector<std::pair<char32_t, char32_t>> ranges_of_set(std::string_view icu_set_pattern) {
  UErrorCode status = U_ZERO_ERROR;
  icu::UnicodeSet set(icu::UnicodeString::fromUTF8(icu::StringPiece(icu_set_pattern.data(), int32_t(icu_set_pattern.size()))),
                      status);
  if (U_FAILURE(status)) fail("ICU rejects the set expression ", icu_set_pattern, ": ", u_errorName(status));
  std::vector<std::pair<char32_t, char32_t>> ranges;
  for (int32_t i = 0; i < set.getRangeCount(); ++i) ranges.emplace_back(char32_t(set.getRangeStart(i)), char32_t(set.getRangeEnd(i)));
  return ranges;
}

bool is_white_space(char32_t cp) { return u_isUWhiteSpace(UChar32(cp)); }

bool is_word_char(char32_t cp) {
  uint32_t mask = U_GET_GC_MASK(UChar32(cp));
  return (mask & (U_GC_L_MASK | U_GC_M_MASK | U_GC_ND_MASK | U_GC_PC_MASK)) != 0;
}

std::string icu_unicode_version() {
  UVersionInfo v;
  u_getUnicodeVersion(v);
  return std::to_string(v[0]) + "." + std::to_string(v[1]);
}

}  // namespace qwen35::unicode
