// gpulet's entry point; everything happens in cli::Run.
#include <iostream>

#include "src/cli/app.h"

int main(int argc, char** argv) {
  return gpulet::cli::Run(argc, argv, std::cout, std::cerr);
}
