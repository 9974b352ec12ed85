if(GPULET_SANITIZE)
  set(_gpulet_san -fsanitize=address,undefined -fno-omit-frame-pointer
                  -fno-sanitize-recover=undefined)
  add_compile_options(${_gpulet_san})
  add_link_options(${_gpulet_san})
endif()
