// Byte-level BPE over the raw bytes of one pre-token piece.
//
// Working on raw bytes rather than on the byte-level spelling is equivalent (the spelling maps each
// byte to one code point, so merges of spelled strings are merges of byte strings) and saves
// re-encoding every piece. Merging follows the reference exactly: repeatedly merge the adjacent pair
// with the lowest merge rank, the leftmost one first among equal ranks, until no pair has a merge.
// A min-heap of candidate pairs makes that O(n log n) per piece instead of rescanning the piece
// after every merge.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

namespace qwen35 {

// Reusable buffers for BpeModel::encode; one per thread (or per encode call).
struct BpeScratch {
  struct Symbol {
    int32_t id;
    int32_t prev;  // index of the left neighbour, -1 at the start
    int32_t next;  // index of the right neighbour, -1 at the end
    bool alive;    // false once merged into its left neighbour
  };
  // A pair that has a merge. Valid while both symbols still hold the ids it was made for.
  struct Candidate {
    uint32_t rank;
    int32_t left;   // symbol index of the left half
    int32_t right;  // symbol index of the right half when the candidate was made
    int32_t left_id, right_id, result;
  };
  std::vector<Symbol> symbols;
  std::vector<Candidate> heap;
};

class BpeModel {
 public:
  struct Merge {
    int32_t left, right, result;  // token ids
  };

  BpeModel() = default;
  // `byte_ids[b]`: the id of the single-byte token for byte b, or -1 when the vocabulary lacks it
  // (such bytes are dropped, as the reference does without an unknown token). `merges` in rank
  // order; when a pair repeats, the later rank wins, as in the reference's merge map.
  BpeModel(const std::array<int32_t, 256>& byte_ids, const std::vector<Merge>& merges);

  // Appends the ids of `piece` (raw bytes) to `out`.
  void encode(std::string_view piece, std::vector<int32_t>& out, BpeScratch& scratch) const;

  size_t merge_count() const { return merge_count_; }

 private:
  struct Slot {
    uint64_t key;  // (left << 32) | right; kEmpty when unused
    uint32_t rank;
    int32_t result;
  };
  static constexpr uint64_t kEmpty = ~uint64_t{0};

  static uint64_t key_of(int32_t left, int32_t right) { return (uint64_t(uint32_t(left)) << 32) | uint32_t(right); }
  inline const Slot* find(int32_t left, int32_t right) const;

  std::array<int32_t, 256> byte_ids_{};
  std::vector<Slot> slots_;  // open addressing, linear probing, power-of-two size
  uint64_t mask_ = 0;
  size_t merge_count_ = 0;
};

}  // namespace qwen35
