// The kubectl plugin `kubectl-gpulet` (kubectl runs it for `kubectl gpulet
// ...`): `status [NODE]` reads the Nodes' memory-share annotations from the
// API server and prints them (memory_status.h). main() only hands argv and
// the environment to RunKubectlGpulet, so tests drive the whole command.
//
// The API server comes from --kubeconfig (one file), else the files of
// $KUBECONFIG merged as kubectl merges them, else ~/.kube/config, else the
// pod's service account;
// --context picks a context of the kubeconfig. Thread safety: none needed.
#pragma once

#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace gpulet::cli {

// Reads an environment variable; nullopt when unset.
using GetenvFn = std::function<std::optional<std::string>(const std::string&)>;

// `args` excludes argv[0]. Returns the exit code: 0 on success (nodes whose
// annotations do not parse are reported on `err`), 1 when the named NODE is
// missing or its annotations do not parse or the API server cannot be
// reached, 2 for a usage error.
int RunKubectlGpulet(const std::vector<std::string>& args, std::ostream& out,
                     std::ostream& err, const GetenvFn& getenv);

}  // namespace gpulet::cli
