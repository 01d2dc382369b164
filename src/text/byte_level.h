// The GPT-2 "byte-level" alphabet: every byte 0..255 is spelled as one printable code point so that
// BPE vocabularies can be stored as text. Printable Latin-1 bytes (33..126, 161..172, 174..255) stand
// for themselves; the other 68 bytes take U+0100.. in byte order (so ' ' is 'Ġ' U+0120, '\n' is 'Ċ').
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace qwen35::byte_level {

// The code point that spells `byte`.
char32_t char_of_byte(uint8_t byte);

// The byte spelled by `cp`, or -1 when `cp` is not in the alphabet.
int byte_of_char(char32_t cp);

// Spells raw bytes in the alphabet (UTF-8 output).
std::string encode(std::string_view bytes);

// Maps a byte-level spelled token back to raw bytes, exactly like the reference ByteLevel decoder:
// when any character of `token` is outside the alphabet (an added token such as "<|im_end|>" is
// inside it; one containing a plain space is not) the token's own UTF-8 bytes are used unchanged.
// Returns false in that fallback case (the token can never come out of byte-level BPE).
bool decode(std::string_view token, std::string* bytes);

}  // namespace qwen35::byte_level
