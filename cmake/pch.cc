// The source of the precompiled headers the components share
// (CMakeLists.txt, TESSERA_PCH).
