#!/usr/bin/env bash
# Runs the whole test suite: C++ unit and golden tests, API tests with the official openai
# client, browser tests in headless Chromium. Installs and builds first (scripts/setup-debian.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup-debian.sh
cmake --build build -j"$(nproc)"  # the tests, benchmarks and fuzzers too
if [ ! -d tests/e2e/node_modules ]; then
  (cd tests/e2e && npm ci --no-audit --no-fund --loglevel=error)
fi
# setup-debian.sh installs lavapipe, so the Vulkan tests run here: no Vulkan driver is a failure.
export QWEN35_REQUIRE_VULKAN=1
ctest --test-dir build --output-on-failure -j"$(nproc)" "$@"
