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
  libavformat-dev libavcodec-dev libswscale-dev libavutil-dev
  chromium fonts-noto-cjk fonts-noto-color-emoji clang libclang-rt-14-dev ffmpeg
  libvulkan-dev glslc vulkan-validationlayers mesa-vulkan-drivers vulkan-tools
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

# Only what `qwen35` needs: the tests, benchmarks and fuzzers are built by scripts/test.sh.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DQWEN35_WERROR="${QWEN35_WERROR:-OFF}" >/dev/null
cmake --build build -j"$(nproc)" --target qwen35_cli
# Installed where a shell finds it: /usr/local as root, else ~/.local (QWEN35_PREFIX overrides),
# with the bundled tiny model beside it (share/qwen35) for the commands run without -m.
if [ -n "${QWEN35_PREFIX:-}" ]; then prefix="$QWEN35_PREFIX"
elif [ "$(id -u)" -eq 0 ]; then prefix=/usr/local
else prefix="$HOME/.local"
fi
cmake --install build --prefix "$prefix" >/dev/null
echo "setup: built build/bin/qwen35 and installed it as $prefix/bin/qwen35"
case ":$PATH:" in
  *":$prefix/bin:"*) ;;
  *) echo "setup: $prefix/bin is not on PATH; add it: export PATH=\"$prefix/bin:\$PATH\"" ;;
esac
