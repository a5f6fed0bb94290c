# CUDA is optional: the CUDA parts are built only when a toolkit is found, and
# nothing else depends on them. PITFALLS: nvcc 13 needs sm_75+, C++17 only, and
# no 'native' architecture (the build machines have no GPU).
#
# Included before the components so that TESSERA_HAVE_CUDA is known to all of
# them (cli/ adds `tessera calibrate` with it); the top-level CMakeLists.txt
# adds cuda/ itself, before cli/.
include(CheckLanguage)
option(TESSERA_CUDA "Build CUDA components when a CUDA toolkit is found" ON)
set(TESSERA_HAVE_CUDA OFF)
if(TESSERA_CUDA AND NOT TESSERA_SANITIZE AND NOT TESSERA_FUZZ)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 75 80 90)
    endif()
    enable_language(CUDA)
    set(TESSERA_HAVE_CUDA ON)
  endif()
endif()
message(STATUS "tessera: CUDA components ${TESSERA_HAVE_CUDA}")
