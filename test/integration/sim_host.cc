// sim_host: a stand-in for a long-running NVML client (the daemon) in the
// `gpulet sim` round-trip test. Loads the library named by argv[1] through
// gpulet's own loader, initialises NVML (which starts the simulator's control
// socket when GPULET_SIM_SOCKET is set), prints "ready", and keeps NVML
// initialised until its stdin reaches EOF.
#include <iostream>
#include <string>

#include "src/gpu/nvml/dynamic_library.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: sim_host <libnvidia-ml.so.1>\n";
    return 2;
  }
  gpulet::nvml::LoadOptions options;
  options.library_path = argv[1];
  auto lib = gpulet::nvml::OpenLibrary(options);
  if (!lib.ok()) {
    std::cerr << "sim_host: " << lib.status().message() << "\n";
    return 1;
  }
  if (auto status = (*lib)->Init(); !status.ok()) {
    std::cerr << "sim_host: " << status.message() << "\n";
    return 1;
  }
  std::cout << "ready" << std::endl;
  std::string line;
  while (std::getline(std::cin, line)) {
  }
  return (*lib)->Shutdown().ok() ? 0 : 1;
}
