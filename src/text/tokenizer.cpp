#include "text/tokenizer.h"

#include <algorithm>

#include "core/error.h"
#include "io/gguf.h"
#include "text/byte_level.h"
#include "text/tokenizer_gguf.h"
#include "text/tokenizer_json.h"
#include "text/utf8.h"

namespace qwen35 {

namespace {

struct TransparentHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// Ids of pieces already encoded in this call. Text repeats words heavily (Zipf), so long inputs
// skip most BPE work; short inputs do not use it, the bookkeeping would cost more than it saves.
class PieceCache {
 public:
  static constexpr size_t kMinText = 2048;     // bytes of input before caching pays off
  static constexpr size_t kMaxPiece = 64;      // longer pieces rarely repeat
  static constexpr size_t kMaxEntries = 1 << 16;

  bool lookup(std::string_view piece, std::vector<int32_t>& out) const {
    auto it = map_.find(piece);
    if (it == map_.end()) return false;
    out.insert(out.end(), ids_.begin() + it->second.first, ids_.begin() + it->second.second);
    return true;
  }
  void insert(std::string_view piece, const int32_t* ids, size_t n) {
    if (map_.size() >= kMaxEntries) return;
    uint32_t begin = uint32_t(ids_.size());
    ids_.insert(ids_.end(), ids, ids + n);
    map_.emplace(std::string(piece), std::make_pair(begin, uint32_t(ids_.size())));
  }

 private:
  std::unordered_map<std::string, std::pair<uint32_t, uint32_t>, TransparentHash, std::equal_to<>> map_;
  std::vector<int32_t> ids_;
};

}  // namespace

// Buffers of one encode() call. Local to the call, so concurrent calls share nothing.
struct Tokenizer::Scratch {
  bool use_cache = false;
  PieceCache cache;
  std::string repaired;    // the input with ill-formed UTF-8 replaced
  std::string normalized;  // one segment after normalization
  std::string prefixed;    // one gap with the prefix space added
  std::vector<AddedTokenMatcher::Match> matches, normalized_matches;
  std::vector<std::string_view> pieces, pieces_scratch;
  BpeScratch bpe;
};

Tokenizer::Tokenizer(const TokenizerSpec& spec)
    : added_(spec.added_tokens),
      normal_form_(spec.normal_form),
      add_prefix_space_(spec.add_prefix_space),
      ignore_merges_(spec.ignore_merges),
      pre_tokenizer_(spec.split_patterns) {
  // Id space and the spelling of every id.
  int64_t size = 0;
  for (const auto& [token, id] : spec.vocab) size = std::max<int64_t>(size, int64_t(id) + 1);
  for (const AddedToken& a : spec.added_tokens) size = std::max<int64_t>(size, int64_t(a.id) + 1);
  // Ids index dense tables; a hostile file with one huge id would make them gigabytes.
  const int64_t count = int64_t(spec.vocab.size() + spec.added_tokens.size());
  if (size > 4 * count + 1024)
    fail("tokenizer ids are too sparse: the largest id is ", size - 1, " for ", count, " tokens");
  std::vector<std::string_view> spelling(static_cast<size_t>(size));
  flags_.assign(size_t(size), 0);
  for (const auto& [token, id] : spec.vocab) {
    if (flags_[id] & kPresent)
      fail("tokenizer: id ", id, " is used by two vocabulary entries (\"", spelling[id], "\" and \"", token, "\")");
    spelling[id] = token;
    flags_[id] = kPresent;
  }
  for (const AddedToken& a : spec.added_tokens) {
    if (a.content.empty()) fail("tokenizer: added token ", a.id, " has empty content");
    if ((flags_[a.id] & kAdded)) fail("tokenizer: id ", a.id, " is used by two added tokens");
    if ((flags_[a.id] & kPresent) && spelling[a.id] != a.content)
      fail("tokenizer: added token \"", a.content, "\" has id ", a.id, ", which the vocabulary gives to \"", spelling[a.id], "\"");
    spelling[a.id] = a.content;
    flags_[a.id] = uint8_t(kPresent | kAdded | (a.special ? kSpecial : 0));
  }

  // Arenas: spelling and raw bytes of every id.
  spelling_offsets_.assign(size_t(size) + 1, 0);
  bytes_offsets_.assign(size_t(size) + 1, 0);
  std::vector<bool> byte_level_spelled(size_t(size), false);
  std::string bytes;
  for (int64_t id = 0; id < size; ++id) {
    spelling_offsets_[id] = uint32_t(spelling_arena_.size());
    bytes_offsets_[id] = uint32_t(bytes_arena_.size());
    spelling_arena_.insert(spelling_arena_.end(), spelling[id].begin(), spelling[id].end());
    byte_level_spelled[id] = byte_level::decode(spelling[id], &bytes);
    bytes_arena_.insert(bytes_arena_.end(), bytes.begin(), bytes.end());
  }
  spelling_offsets_[size] = uint32_t(spelling_arena_.size());
  bytes_offsets_[size] = uint32_t(bytes_arena_.size());

  vocab_by_spelling_.reserve(spec.vocab.size());
  for (const auto& [token, id] : spec.vocab) vocab_by_spelling_.emplace(id_to_token(id), id);
  // Content that is also a vocabulary entry (GPT-2's <|endoftext|>) resolves to the added token.
  for (const AddedToken& a : spec.added_tokens) added_by_content_.emplace(id_to_token(a.id), a.id);
  if (ignore_merges_) {
    for (const auto& [token, id] : spec.vocab)
      if (byte_level_spelled[id]) vocab_by_bytes_.emplace(token_bytes(id), id);
  }

  auto vocab_id = [&](const std::string& token) -> int32_t {
    auto it = vocab_by_spelling_.find(token);
    return it == vocab_by_spelling_.end() ? -1 : it->second;
  };

  int32_t unk = -1;
  if (spec.unk_token) {
    unk = vocab_id(*spec.unk_token);
    if (unk < 0) fail("tokenizer: unk_token \"", *spec.unk_token, "\" is not in the vocabulary");
  }
  std::array<int32_t, 256> byte_ids;
  for (int b = 0; b < 256; ++b) {
    int32_t id = vocab_id(byte_level::encode(std::string(1, char(b))));
    byte_ids[b] = id >= 0 ? id : unk;
  }

  std::vector<BpeModel::Merge> merges;
  merges.reserve(spec.merges.size());
  std::string joined;
  for (size_t rank = 0; rank < spec.merges.size(); ++rank) {
    const auto& [left, right] = spec.merges[rank];
    int32_t l = vocab_id(left), r = vocab_id(right);
    if (l < 0 || r < 0)
      fail("tokenizer: merge #", rank, " (\"", left, "\" \"", right, "\") names a token missing from the vocabulary");
    joined.assign(left).append(right);
    int32_t result = vocab_id(joined);
    if (result < 0) fail("tokenizer: merge #", rank, " makes \"", joined, "\", which is missing from the vocabulary");
    merges.push_back({l, r, result});
  }
  bpe_ = BpeModel(byte_ids, merges);

  std::vector<AddedToken> raw, normalized;
  for (const AddedToken& a : added_) {
    if (!a.normalized) {
      raw.push_back(a);
      continue;
    }
    // Normalized tokens are searched in normalized text, so their content is normalized too.
    AddedToken n = a;
    n.content.clear();
    unicode::normalize(normal_form_, a.content, n.content);
    normalized.push_back(std::move(n));
  }
  raw_matcher_ = AddedTokenMatcher(raw);
  normalized_matcher_ = AddedTokenMatcher(normalized);
}

Tokenizer Tokenizer::from_file(const std::string& path) {
  if (is_gguf_file(path)) return Tokenizer(tokenizer_spec_from_gguf(*GgufFile::open(path)));
  return Tokenizer(load_tokenizer_json(path));
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  if (auto it = added_by_content_.find(token); it != added_by_content_.end()) return it->second;
  if (auto it = vocab_by_spelling_.find(token); it != vocab_by_spelling_.end()) return it->second;
  return std::nullopt;
}

std::string_view Tokenizer::id_to_token(int32_t id) const {
  if (!is_valid_id(id)) return {};
  return std::string_view(spelling_arena_.data() + spelling_offsets_[id], spelling_offsets_[id + 1] - spelling_offsets_[id]);
}

std::string_view Tokenizer::token_bytes(int32_t id) const {
  if (!is_valid_id(id)) return {};
  return std::string_view(bytes_arena_.data() + bytes_offsets_[id], bytes_offsets_[id + 1] - bytes_offsets_[id]);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, AddedTokenMode mode) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  encode(text, mode, ids);
  return ids;
}

void Tokenizer::encode(std::string_view text, AddedTokenMode mode, std::vector<int32_t>& out) const {
  Scratch s;
  s.use_cache = text.size() >= PieceCache::kMinText;
  if (!utf8::is_valid(text)) {
    utf8::append_lossy(s.repaired, text);
    text = s.repaired;
  }
  if (mode != AddedTokenMode::kPlainText) raw_matcher_.find(text, mode == AddedTokenMode::kSplitSpecial, s.matches);
  size_t pos = 0;
  for (const AddedTokenMatcher::Match& m : s.matches) {
    if (m.start > pos) encode_segment(text.substr(pos, m.start - pos), mode, s, out);
    out.push_back(m.id);
    pos = m.end;
  }
  if (pos < text.size()) encode_segment(text.substr(pos), mode, s, out);
}

std::vector<int32_t> Tokenizer::encode_outside(std::string_view text,
                                               const std::vector<std::pair<size_t, size_t>>& plain) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  if (plain.empty()) {
    encode(text, AddedTokenMode::kMatchAll, out);
    return out;
  }
  Scratch s;
  s.use_cache = text.size() >= PieceCache::kMinText;
  std::vector<std::pair<size_t, size_t>> spans = plain;
  if (!utf8::is_valid(text)) {  // repaired piece by piece, so the ranges still delimit the same text
    spans.clear();
    size_t pos = 0;
    for (const auto& [a, b] : plain) {
      utf8::append_lossy(s.repaired, text.substr(pos, a - pos));
      const size_t start = s.repaired.size();
      utf8::append_lossy(s.repaired, text.substr(a, b - a));
      spans.emplace_back(start, s.repaired.size());
      pos = b;
    }
    utf8::append_lossy(s.repaired, text.substr(pos));
    text = s.repaired;
  }
  // Each stretch between plain ranges is searched on its own.
  std::vector<AddedTokenMatcher::Match> found;
  auto search = [&](size_t a, size_t b) {
    if (a >= b) return;
    found.clear();
    raw_matcher_.find(text.substr(a, b - a), /*skip_special=*/false, found);
    for (const AddedTokenMatcher::Match& m : found) s.matches.push_back({m.start + a, m.end + a, m.id});
  };
  size_t pos = 0;
  for (const auto& [a, b] : spans) {
    search(pos, a);
    pos = b;
  }
  search(pos, text.size());
  size_t next_span = 0;
  auto touches_plain = [&](size_t a, size_t b) {
    while (next_span < spans.size() && spans[next_span].second <= a) ++next_span;
    return next_span < spans.size() && spans[next_span].first < b;
  };
  pos = 0;
  auto gap = [&](size_t a, size_t b) {
    if (a >= b) return;
    encode_segment(text.substr(a, b - a), touches_plain(a, b) ? AddedTokenMode::kPlainText : AddedTokenMode::kMatchAll, s,
                   out);
  };
  for (const AddedTokenMatcher::Match& m : s.matches) {
    gap(pos, m.start);
    out.push_back(m.id);
    pos = m.end;
  }
  gap(pos, text.size());
  return out;
}

void Tokenizer::encode_segment(std::string_view raw, AddedTokenMode mode, Scratch& s, std::vector<int32_t>& out) const {
  s.normalized.clear();
  unicode::normalize(normal_form_, raw, s.normalized);
  std::string_view text = s.normalized;
  if (normalized_matcher_.empty() || mode == AddedTokenMode::kPlainText) {
    encode_normalized(text, s, out);
    return;
  }
  s.normalized_matches.clear();
  normalized_matcher_.find(text, mode == AddedTokenMode::kSplitSpecial, s.normalized_matches);
  size_t pos = 0;
  for (const AddedTokenMatcher::Match& m : s.normalized_matches) {
    if (m.start > pos) encode_normalized(text.substr(pos, m.start - pos), s, out);
    out.push_back(m.id);
    pos = m.end;
  }
  if (pos < text.size()) encode_normalized(text.substr(pos), s, out);
}

void Tokenizer::encode_normalized(std::string_view text, Scratch& s, std::vector<int32_t>& out) const {
  if (add_prefix_space_ && !text.empty() && text[0] != ' ') {
    s.prefixed.clear();
    s.prefixed.push_back(' ');
    s.prefixed.append(text);
    text = s.prefixed;
  }
  s.pieces.clear();
  pre_tokenizer_.split(text, s.pieces, s.pieces_scratch);
  for (std::string_view piece : s.pieces) {
    if (ignore_merges_) {
      if (auto it = vocab_by_bytes_.find(piece); it != vocab_by_bytes_.end()) {
        out.push_back(it->second);
        continue;
      }
    }
    if (piece.size() == 1 || !s.use_cache || piece.size() > PieceCache::kMaxPiece) {
      bpe_.encode(piece, out, s.bpe);
      continue;
    }
    if (s.cache.lookup(piece, out)) continue;
    size_t before = out.size();
    bpe_.encode(piece, out, s.bpe);
    s.cache.insert(piece, out.data() + before, out.size() - before);
  }
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string bytes;
  for (int32_t id : ids) {
    if (!is_valid_id(id) || (skip_special && (flags_[id] & kSpecial))) continue;
    bytes.append(token_bytes(id));
  }
  if (utf8::is_valid(bytes)) return bytes;
  std::string text;
  text.reserve(bytes.size() + 8);
  utf8::append_lossy(text, bytes);
  return text;
}

std::vector<std::string> Tokenizer::pretokenize(std::string_view text) const {
  Scratch s;
  if (!utf8::is_valid(text)) {
    utf8::append_lossy(s.repaired, text);
    text = s.repaired;
  }
  unicode::normalize(normal_form_, text, s.normalized);
  std::string_view normalized = s.normalized;
  if (add_prefix_space_ && !normalized.empty() && normalized[0] != ' ') {
    s.prefixed.clear();
    s.prefixed.push_back(' ');
    s.prefixed.append(normalized);
    normalized = s.prefixed;
  }
  pre_tokenizer_.split(normalized, s.pieces, s.pieces_scratch);
  std::vector<std::string> out;
  out.reserve(s.pieces.size());
  for (std::string_view piece : s.pieces) out.push_back(byte_level::encode(piece));
  return out;
}

}  // namespace qwen35
