# gpulet_embed_files(OUT <file.cc> NAMESPACE <ns> FILES <f>...)
# Generates a .cc defining `const std::vector<EmbeddedFile>& EmbeddedFiles()`
# in <ns> with each file's base name (without extension) and contents, so
# data files ship inside the binary that uses them.
function(gpulet_embed_files)
  cmake_parse_arguments(E "" "OUT;NAMESPACE" "FILES" ${ARGN})
  add_custom_command(
    OUTPUT ${E_OUT}
    COMMAND ${CMAKE_COMMAND} -DOUT=${E_OUT} -DNAMESPACE=${E_NAMESPACE}
            "-DFILES=${E_FILES}" -P ${PROJECT_SOURCE_DIR}/cmake/embed.cmake
    DEPENDS ${E_FILES} ${PROJECT_SOURCE_DIR}/cmake/embed.cmake
    COMMENT "Embedding ${E_NAMESPACE} data files"
    VERBATIM)
endfunction()
