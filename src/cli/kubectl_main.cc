// kubectl-gpulet: the kubectl plugin (`kubectl gpulet status [NODE]`). This
// file only reads argv and the environment; the command is
// RunKubectlGpulet (kubectl_command.h). See docs/cli.md.
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "src/cli/kubectl_command.h"

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  return gpulet::cli::RunKubectlGpulet(
      args, std::cout, std::cerr,
      [](const std::string& name) -> std::optional<std::string> {
        const char* value = std::getenv(name.c_str());
        if (value == nullptr) return std::nullopt;
        return std::string(value);
      });
}
