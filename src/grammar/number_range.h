// Grammars for the JSON numbers in a range, for JSON Schema's minimum / maximum / exclusive*.
//
// Exact: every text the grammar matches is in the range, by the value a JSON Schema validator
// reads (a double). Integers are written canonically (no leading zeros, no "-0") with at most 16
// digits. Decimals are written without an exponent and with at most 15 digits in all: two
// decimals of 15 significant digits or fewer never round to the same double, so comparing the
// text digit by digit with the bound's shortest round-trip form gives the validator's answer.
#pragma once

#include <cstdint>
#include <optional>

#include "grammar/grammar_ir.h"

namespace qwen35::grammar {

inline constexpr int64_t kMaxIntMagnitude = 9999999999999999;  // 16 digits
inline constexpr int kMaxDecimalDigits = 15;

// Every integer in [lo, hi] (|lo|, |hi| <= kMaxIntMagnitude); nothing when lo > hi.
Expr integer_range(int64_t lo, int64_t hi);

struct NumberBound {
  double value;
  bool exclusive;
};

// Every decimal number (no exponent, <= kMaxDecimalDigits digits) between the bounds; an absent
// bound is no bound. Bounds must be finite.
Expr decimal_range(std::optional<NumberBound> lo, std::optional<NumberBound> hi);

// Numbers with a non-zero fraction (not integers by JSON Schema's definition), no exponent.
Expr non_integer_number();

}  // namespace qwen35::grammar
