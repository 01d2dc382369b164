#!/usr/bin/env bash
# Installs what qwen35 needs on Debian 12 and builds it (Release, into build/).
# Idempotent: run it again after pulling. Uses sudo when not root.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

packages=(
  build-essential cmake ninja-build pkg-config git
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libboost1.81-dev libssl-dev zlib1g-dev libcpp-httplib-dev libpcre2-dev libicu-dev
  libjpeg62-turbo-dev libpng-dev libwebp-dev libgif-dev
  chromium clang libclang-rt-14-dev
)
command -v node >/dev/null 2>&1 || packages+=(nodejs npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
echo "setup: built build/bin/qwen35"
