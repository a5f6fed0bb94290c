# Every dependency comes from Debian's archive; scripts/setup.sh installs them.
find_package(PkgConfig REQUIRED)
# Protobuf must be found before ONNX, or ONNX's config fails to configure.
find_package(Protobuf REQUIRED)
find_package(ONNX REQUIRED)            # targets onnx, onnx_proto (ONNX_ML=1)
find_package(Boost 1.74 REQUIRED)      # header-only Boost.Graph
find_package(nlohmann_json 3 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(OpenSSL REQUIRED)
find_package(Threads REQUIRED)
# Debian's cpp-httplib is a compiled library: its -DCPPHTTPLIB_* flags must
# reach every file that includes httplib.h (PITFALLS.md).
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
find_package(fmt REQUIRED)

# GLPK ships neither a CMake config nor a pkg-config file.
find_library(GLPK_LIB glpk REQUIRED)
find_path(GLPK_INCLUDE_DIR glpk.h REQUIRED)
add_library(tessera_glpk INTERFACE)
target_link_libraries(tessera_glpk INTERFACE ${GLPK_LIB})
target_include_directories(tessera_glpk SYSTEM INTERFACE ${GLPK_INCLUDE_DIR})

pkg_check_modules(CBC REQUIRED IMPORTED_TARGET cbc)
# PostgreSQL's client library, for the shared job store (service/store/).
pkg_check_modules(LIBPQ REQUIRED IMPORTED_TARGET libpq)

if(TESSERA_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(TESSERA_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
