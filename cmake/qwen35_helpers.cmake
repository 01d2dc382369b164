# Warnings and options shared by every qwen35 target.
add_library(qwen35_options INTERFACE)
target_compile_options(qwen35_options INTERFACE
  -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers)
target_compile_features(qwen35_options INTERFACE cxx_std_20)
if(QWEN35_WERROR)  # CI: a warning in our own code fails the build
  target_compile_options(qwen35_options INTERFACE -Werror)
endif()
if(QWEN35_SANITIZE)
  target_compile_options(qwen35_options INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer)
  target_link_options(qwen35_options INTERFACE -fsanitize=address,undefined)
endif()

# qwen35_layer(NAME DEPS ...): one static library from every .cpp in the calling folder
# (sub-folders excluded), public include root src/ and include/.
function(qwen35_layer name)
  cmake_parse_arguments(ARG "" "" "DEPS;SOURCES" ${ARGN})
  if(ARG_SOURCES)
    set(srcs ${ARG_SOURCES})
  else()
    file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  endif()
  if(NOT srcs)  # a layer not written yet
    add_library(${name} INTERFACE)
    target_include_directories(${name} INTERFACE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
    target_link_libraries(${name} INTERFACE ${ARG_DEPS})
    return()
  endif()
  add_library(${name} STATIC ${srcs})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
  target_link_libraries(${name} PUBLIC ${ARG_DEPS} PRIVATE qwen35_options)
endfunction()

# qwen35_test(NAME LIBS ...): one GoogleTest binary from every .cpp in the calling folder.
function(qwen35_test name)
  cmake_parse_arguments(ARG "" "" "LIBS;LABELS" ${ARGN})
  file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  if(NOT srcs)
    return()
  endif()
  add_executable(${name} ${srcs})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} qwen35_test_support GTest::gtest_main qwen35_options)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "${ARG_LABELS}")
endfunction()
