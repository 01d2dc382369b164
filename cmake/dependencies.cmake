# Everything comes from Debian packages (scripts/setup-debian.sh installs them).
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
pkg_check_modules(ICU REQUIRED IMPORTED_TARGET icu-uc)
pkg_check_modules(JPEG REQUIRED IMPORTED_TARGET libjpeg)
pkg_check_modules(PNG REQUIRED IMPORTED_TARGET libpng)
pkg_check_modules(WEBP REQUIRED IMPORTED_TARGET libwebp libwebpdemux)
find_package(GIF REQUIRED)
# Video: FFmpeg's libraries (Debian 12 ships 5.1), in process.
pkg_check_modules(FFMPEG REQUIRED IMPORTED_TARGET libavformat>=59 libavcodec>=59 libswscale>=6 libavutil>=57)
# The server's HTTP (an asynchronous server with hard limits, and the client for remote images):
# Boost.Asio and Boost.Beast, header-only; OpenSSL for https images.
find_package(Boost 1.81 REQUIRED CONFIG)
find_package(OpenSSL REQUIRED)
if(QWEN35_BUILD_TESTS)
  find_package(GTest REQUIRED)
  include(GoogleTest)
  # The server tests talk to it with an independent HTTP implementation, and build gzip bodies.
  pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
  find_package(ZLIB REQUIRED)
endif()
if(QWEN35_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
# Vulkan (the GPU backend, src/kernels/vulkan): the loader and glslc, which compiles its GLSL
# compute shaders to SPIR-V at build time. Optional: without them the engine builds for the CPU.
find_package(Vulkan QUIET COMPONENTS glslc)
if(Vulkan_FOUND AND Vulkan_glslc_FOUND)
  set(qwen35_vulkan_found ON)
else()
  set(qwen35_vulkan_found OFF)
endif()
option(QWEN35_VULKAN "Build the Vulkan backend (libvulkan-dev and glslc)" ${qwen35_vulkan_found})
if(QWEN35_VULKAN AND NOT qwen35_vulkan_found)
  message(FATAL_ERROR "QWEN35_VULKAN=ON but the Vulkan headers/loader or glslc were not found "
                      "(Debian: libvulkan-dev glslc); configure with -DQWEN35_VULKAN=OFF to build without")
endif()
