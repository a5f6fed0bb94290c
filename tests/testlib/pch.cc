// The source of the precompiled headers the tests share (tests/CMakeLists.txt).
