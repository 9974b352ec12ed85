# Every dependency comes from a Debian package installed by scripts/bootstrap.
find_package(Threads REQUIRED)
find_package(absl CONFIG REQUIRED)
find_package(yaml-cpp CONFIG REQUIRED)
find_package(nlohmann_json CONFIG REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
find_package(toml11 CONFIG REQUIRED)
find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)
# TLS for the Kubernetes API client (src/net/kube) and the HTTP server.
find_package(OpenSSL REQUIRED)
# HTTP/2 framing, HPACK and flow control for the kubelet-facing transport.
find_package(PkgConfig REQUIRED)
pkg_check_modules(NGHTTP2 REQUIRED IMPORTED_TARGET libnghttp2)
if(GPULET_BUILD_TESTS)
  # A local HTTPS server for the API client's transport tests. Debian's
  # cpp-httplib is a compiled library; its pkg-config file carries the
  # defines its ABI was built with.
  pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
endif()
if(GPULET_BUILD_TESTS)
  find_package(GTest CONFIG REQUIRED)
endif()
if(GPULET_BUILD_BENCH)
  find_package(benchmark CONFIG REQUIRED)
endif()

# gpulet_link_archives(<target>): link abseil, protobuf and yaml-cpp into
# the program from Debian's archives instead of loading their shared
# libraries at every start (32 fewer libraries for `gpulet`; start-up and
# resident memory in docs/benchmarks.md). Off with GPULET_STATIC_DEPS=OFF.
option(GPULET_STATIC_DEPS
  "Link abseil, protobuf and yaml-cpp into gpulet's programs" ON)
function(gpulet_link_archives target)
  if(GPULET_STATIC_DEPS)
    set_target_properties(${target} PROPERTIES CXX_LINKER_LAUNCHER
      ${PROJECT_SOURCE_DIR}/cmake/link-archives)
  endif()
endfunction()
