// The pieces under the tokenizer: UTF-8 repair, the byte-level alphabet, normalization, and the
// split pattern's character classes checked against ICU for every code point.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <functional>
#include <memory>
#include <set>

#include <unicode/uchar.h>
#include <unicode/utf8.h>

#include "core/error.h"
#include "text/byte_level.h"
#include "text/pretokenizer.h"
#include "text/unicode.h"
#include "text/utf8.h"
#include "tokenizer_test_util.h"

namespace qwen35::test {
namespace {

std::string lossy(std::string_view bytes) {
  std::string out;
  utf8::append_lossy(out, bytes);
  return out;
}

std::string repeat_fffd(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += utf8::kReplacementUtf8;
  return s;
}

TEST(TokenizerUtf8, LossyReplacesEachMaximalSubpart) {
  EXPECT_EQ(lossy("plain ascii"), "plain ascii");
  EXPECT_EQ(lossy("\xF0\x9F\x98\x8A ok \xC3\xA9"), "\xF0\x9F\x98\x8A ok \xC3\xA9");
  EXPECT_EQ(lossy("\xED\xA0\x80"), repeat_fffd(3));      // UTF-16 surrogate spelled in UTF-8
  EXPECT_EQ(lossy("\xED\xBF\xBF"), repeat_fffd(3));      // low surrogate
  EXPECT_EQ(lossy("\xC0\x80"), repeat_fffd(2));          // overlong NUL
  EXPECT_EQ(lossy("\xE0\x80\xAF"), repeat_fffd(3));      // overlong '/'
  EXPECT_EQ(lossy("\xF0\x9F\x98"), repeat_fffd(1));      // emoji cut short: one subpart
  EXPECT_EQ(lossy("\xF0\x9F\x98" "A"), repeat_fffd(1) + "A");
  EXPECT_EQ(lossy("\xE2\x82" "x\xE2"), repeat_fffd(1) + "x" + repeat_fffd(1));
  EXPECT_EQ(lossy("\x80\xBF"), repeat_fffd(2));          // lone continuation bytes
  EXPECT_EQ(lossy("\xF4\x90\x80\x80"), repeat_fffd(4));  // above U+10FFFF
  EXPECT_EQ(lossy("\xF5\xFF\xFE"), repeat_fffd(3));
  EXPECT_EQ(lossy(std::string("a\0b", 3)), std::string("a\0b", 3));
  EXPECT_TRUE(utf8::is_valid("\xF4\x8F\xBF\xBF"));
  EXPECT_FALSE(utf8::is_valid("\xF4\x90\x80\x80"));
}

TEST(TokenizerUtf8, IncompleteTailIsHeldOnlyWhenItCanStillComplete) {
  EXPECT_EQ(utf8::incomplete_tail(""), 0u);
  EXPECT_EQ(utf8::incomplete_tail("abc"), 0u);
  EXPECT_EQ(utf8::incomplete_tail("a\xF0"), 1u);
  EXPECT_EQ(utf8::incomplete_tail("a\xF0\x9F"), 2u);
  EXPECT_EQ(utf8::incomplete_tail("a\xF0\x9F\x98"), 3u);
  EXPECT_EQ(utf8::incomplete_tail("a\xF0\x9F\x98\x8A"), 0u);  // complete
  EXPECT_EQ(utf8::incomplete_tail("a\xE2\x82"), 2u);
  EXPECT_EQ(utf8::incomplete_tail("a\xED\xA0"), 0u);  // ED A0 can never complete
  EXPECT_EQ(utf8::incomplete_tail("a\xC0"), 0u);      // never a lead byte
  EXPECT_EQ(utf8::incomplete_tail("a\x80"), 0u);
}

// Cross-check of decode() and maximal_subpart() against ICU's U8_NEXT (which also replaces
// maximal subparts) on every 4-byte string over a set of boundary bytes.
TEST(TokenizerUtf8, DecodeAgreesWithIcuOnShortByteStrings) {
  const uint8_t interesting[] = {0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2,
                                 0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF3, 0xF4, 0xF5, 0xFF};
  for (uint8_t a : interesting)
    for (uint8_t b : interesting)
      for (uint8_t c : interesting)
        for (uint8_t d : interesting) {
          const char raw[4] = {char(a), char(b), char(c), char(d)};
          std::string_view s(raw, 4);
          char32_t cp = 0;
          size_t len = utf8::decode(s, &cp);
          int32_t i = 0;
          UChar32 icu_cp;
          U8_NEXT(reinterpret_cast<const uint8_t*>(raw), i, 4, icu_cp);
          if (icu_cp < 0) {
            EXPECT_EQ(len, 0u);
            EXPECT_EQ(utf8::maximal_subpart(s), size_t(i)) << std::hex << int(a) << " " << int(b) << " " << int(c);
          } else {
            EXPECT_EQ(len, size_t(i));
            EXPECT_EQ(cp, char32_t(icu_cp));
          }
        }
}

TEST(TokenizerByteLevel, AlphabetIsABijectionWithTheKnownSpellings) {
  std::set<char32_t> seen;
  for (int b = 0; b < 256; ++b) {
    char32_t cp = byte_level::char_of_byte(uint8_t(b));
    EXPECT_TRUE(seen.insert(cp).second);
    EXPECT_EQ(byte_level::byte_of_char(cp), b);
  }
  EXPECT_EQ(byte_level::char_of_byte(' '), U'\u0120');   // Ġ
  EXPECT_EQ(byte_level::char_of_byte('\n'), U'\u010A');  // Ċ
  EXPECT_EQ(byte_level::char_of_byte('\r'), U'\u010D');  // č
  EXPECT_EQ(byte_level::char_of_byte('A'), U'A');
  EXPECT_EQ(byte_level::char_of_byte(0xAD), U'\u0143');  // soft hyphen byte, the last remapped
  EXPECT_EQ(byte_level::encode("\xF0\x9F\x98\x8A"), "ðŁĺĬ");
  std::string bytes;
  EXPECT_TRUE(byte_level::decode("ĠHello", &bytes));
  EXPECT_EQ(bytes, " Hello");
  // A character outside the alphabet: the reference keeps the token's own UTF-8 bytes.
  EXPECT_FALSE(byte_level::decode("a b", &bytes));
  EXPECT_EQ(bytes, "a b");
}

TEST(TokenizerNormalize, NfcComposesButKeepsCompatibilityCharacters) {
  auto nfc = [](std::string_view s) {
    std::string out;
    unicode::normalize(unicode::NormalForm::kNFC, s, out);
    return out;
  };
  EXPECT_EQ(nfc("e\u0301"), "\u00E9");
  EXPECT_EQ(nfc("\u212B"), "\u00C5");  // Angstrom sign
  EXPECT_EQ(nfc("\u2126"), "\u03A9");  // Ohm sign
  EXPECT_EQ(nfc("\u212A"), "K");       // Kelvin sign
  EXPECT_EQ(nfc("\u1100\u1161\u11A8"), "\uAC01");  // Hangul jamo -> syllable
  EXPECT_EQ(nfc("\uFB01 \u2460 \uFF21"), "\uFB01 \u2460 \uFF21");
  EXPECT_TRUE(unicode::is_normalized(unicode::NormalForm::kNFC, "plain"));
  EXPECT_FALSE(unicode::is_normalized(unicode::NormalForm::kNFC, "e\u0301"));
}

// Whether `pattern` (translated as the splitter does) matches the single character `cp`.
class ClassProbe {
 public:
  explicit ClassProbe(const std::string& pattern) {
    std::string translated = "^(?:" + translate_pattern(pattern) + ")$";
    int error;
    PCRE2_SIZE offset;
    code_.reset(pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(), PCRE2_UTF | PCRE2_UCP,
                              &error, &offset, nullptr));
    if (!code_) throw std::runtime_error("probe pattern does not compile: " + translated);
    pcre2_jit_compile(code_.get(), PCRE2_JIT_COMPLETE);
    data_.reset(pcre2_match_data_create(1, nullptr));
  }
  bool matches(char32_t cp) {
    std::string s;
    utf8::append(s, cp);
    return pcre2_match(code_.get(), reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), 0, 0, data_.get(), nullptr) >= 0;
  }

 private:
  struct CodeFree {
    void operator()(pcre2_code* c) const { pcre2_code_free(c); }
  };
  struct DataFree {
    void operator()(pcre2_match_data* d) const { pcre2_match_data_free(d); }
  };
  std::unique_ptr<pcre2_code, CodeFree> code_;
  std::unique_ptr<pcre2_match_data, DataFree> data_;
};

bool gc_in(char32_t cp, uint32_t mask) { return (U_GET_GC_MASK(UChar32(cp)) & mask) != 0; }

// The classes of the Qwen2/3 and Qwen3.5 patterns must be Oniguruma's: \s = White_Space and
// \p{..} = the Unicode general category (as of ICU's Unicode version) for all code points.
TEST(TokenizerPattern, CharacterClassesMatchIcuForEveryCodePoint) {
  struct Case {
    std::string pattern;
    std::function<bool(char32_t)> expected;
  };
  auto ws = [](char32_t c) { return bool(u_isUWhiteSpace(UChar32(c))); };
  std::vector<Case> cases = {
      {"\\s", ws},
      {"\\S", [&](char32_t c) { return !ws(c); }},
      {"\\p{L}", [](char32_t c) { return gc_in(c, U_GC_L_MASK); }},
      {"\\p{M}", [](char32_t c) { return gc_in(c, U_GC_M_MASK); }},
      {"\\p{N}", [](char32_t c) { return gc_in(c, U_GC_N_MASK); }},
      {"[\\p{L}\\p{M}]", [](char32_t c) { return gc_in(c, U_GC_L_MASK | U_GC_M_MASK); }},
      {"[^\\r\\n\\p{L}\\p{N}]", [](char32_t c) { return c != '\r' && c != '\n' && !gc_in(c, U_GC_L_MASK | U_GC_N_MASK); }},
      {"[^\\s\\p{L}\\p{M}\\p{N}]", [&](char32_t c) { return !ws(c) && !gc_in(c, U_GC_L_MASK | U_GC_M_MASK | U_GC_N_MASK); }},
      {"[\\S]", [&](char32_t c) { return !ws(c); }},
  };
  for (Case& c : cases) {
    ClassProbe probe(c.pattern);
    int mismatches = 0;
    for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
      if (cp >= 0xD800 && cp <= 0xDFFF) continue;
      if (probe.matches(cp) != c.expected(cp) && ++mismatches <= 5)
        ADD_FAILURE() << c.pattern << " disagrees with ICU at U+" << std::hex << uint32_t(cp);
    }
    EXPECT_EQ(mismatches, 0) << c.pattern;
  }
}

TEST(TokenizerPattern, CaseInsensitiveContractionsFoldLongS) {
  RegexSplitter split(kQwen35SplitPattern);
  std::vector<std::string_view> pieces;
  split.split("it'\u017Ft IT'S we'RE", pieces);
  std::vector<std::string_view> expected = {"it", "'\u017F", "t", " IT", "'S", " we", "'RE"};
  EXPECT_EQ(pieces, expected);
}

TEST(TokenizerPattern, WhitespaceRunsGiveBackTheirLastCharacter) {
  RegexSplitter split(kQwen35SplitPattern);
  std::vector<std::string_view> pieces;
  split.split("a   b\t\n\n c", pieces);
  std::vector<std::string_view> expected = {"a", "  ", " b", "\t\n\n", " c"};
  EXPECT_EQ(pieces, expected);
}

// U+180E (Mongolian vowel separator) is not White_Space since Unicode 6.3; PCRE2's own \s still
// matches it. Oniguruma treats it like punctuation (" ?[^\s\p{L}\p{N}]+"); taken as whitespace
// it would split as "\u180E", "\u180Eb" (\s+(?!\S) gives one back, which then joins the word).
TEST(TokenizerPattern, MongolianVowelSeparatorIsNotWhitespace) {
  RegexSplitter split(kQwen35SplitPattern);
  std::vector<std::string_view> pieces;
  split.split("a\u180E\u180Eb", pieces);
  std::vector<std::string_view> expected = {"a", "\u180E\u180E", "b"};
  EXPECT_EQ(pieces, expected);
}

// Kawi letters (Unicode 15) are letters for ICU 72 even where PCRE2's tables predate them.
TEST(TokenizerPattern, LettersNewerThanPcre2AreStillLetters) {
  RegexSplitter split(kQwen2SplitPattern);
  std::vector<std::string_view> pieces;
  split.split("a\U00011F04\U00011F05 b", pieces);
  std::vector<std::string_view> expected = {"a\U00011F04\U00011F05", " b"};
  EXPECT_EQ(pieces, expected);
}

TEST(TokenizerPattern, GapsBetweenMatchesArePieces) {
  RegexSplitter split("[0-9]+");
  std::vector<std::string_view> pieces;
  split.split("ab12cd345", pieces);
  std::vector<std::string_view> expected = {"ab", "12", "cd", "345"};
  EXPECT_EQ(pieces, expected);
  EXPECT_THROW(RegexSplitter("(unclosed"), Error);
}

TEST(TokenizerPattern, LongRunsAreLinearAndDoNotOverflowTheStack) {
  RegexSplitter split(kQwen35SplitPattern);
  std::string spaces(1 << 20, ' ');
  std::vector<std::string_view> pieces;
  split.split(spaces + "x", pieces);
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[0].size(), spaces.size() - 1);
  pieces.clear();
  std::string letters(1 << 20, 'a');
  split.split(letters, pieces);
  EXPECT_EQ(pieces.size(), 1u);
}

}  // namespace
}  // namespace qwen35::test
