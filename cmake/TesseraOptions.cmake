# Compiler warnings and sanitizers, shared by every target through the
# INTERFACE target tessera_options.
add_library(tessera_options INTERFACE)
target_compile_options(tessera_options INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align
  -Woverloaded-virtual -Wimplicit-fallthrough)
# Clang checks the lock rules written as annotations (common/mutex.h): a
# guarded member touched, or a function that needs a lock called, without
# it. GCC has no such analysis; the Clang builds (the fuzz targets, which
# build the service) run it in CI.
if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  target_compile_options(tessera_options INTERFACE -Wthread-safety)
endif()
if(TESSERA_WERROR)
  target_compile_options(tessera_options INTERFACE -Werror)
endif()

if(TESSERA_SANITIZE)
  string(REPLACE ";" "," _tessera_san "${TESSERA_SANITIZE}")
  message(STATUS "tessera: building with -fsanitize=${_tessera_san}")
  target_compile_options(tessera_options INTERFACE
    -fsanitize=${_tessera_san} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_link_options(tessera_options INTERFACE -fsanitize=${_tessera_san})
  # With the sanitizers' instrumentation and optimization (the ASan build is
  # -O1), GCC 12's -Wmaybe-uninitialized misfires inside libstdc++ (<regex>,
  # std::function's move): false positives in system headers; the normal
  # build keeps the warning.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(tessera_options INTERFACE -Wno-maybe-uninitialized)
  endif()
  # GCC warns (-Wtsan) that TSan does not model std::atomic_thread_fence,
  # which Boost.Asio's headers use (http/): a warning about a third-party
  # header, not an error of ours.
  if("thread" IN_LIST TESSERA_SANITIZE AND
     CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(tessera_options INTERFACE -Wno-tsan)
  endif()
endif()

# TESSERA_FUZZ: every library with libFuzzer's coverage instrumentation and
# ASan + UBSan; the fuzz targets add libFuzzer's main (fuzz/CMakeLists.txt).
if(TESSERA_FUZZ)
  target_compile_options(tessera_options INTERFACE
    -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
    -fno-sanitize-recover=all)
  target_link_options(tessera_options INTERFACE
    -fsanitize=fuzzer-no-link,address,undefined)
endif()
