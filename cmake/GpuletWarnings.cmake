# Warnings live on an INTERFACE target that every gpulet target links.
add_library(gpulet_warnings INTERFACE)
target_compile_options(gpulet_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align
  -Woverloaded-virtual -Wimplicit-fallthrough)
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  target_compile_options(gpulet_warnings INTERFACE -Wthread-safety)
endif()
if(GPULET_WERROR)
  target_compile_options(gpulet_warnings INTERFACE -Werror)
endif()
