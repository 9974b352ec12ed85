#include "src/cli/kubectl_command.h"

#include <unistd.h>

#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "src/cli/memory_status.h"
#include "src/net/kube/api_client.h"
#include "src/net/kube/api_path.h"
#include "src/net/kube/client.h"

namespace gpulet::cli {
namespace {

constexpr char kUsage[] =
    "Usage: kubectl gpulet status [NODE] [-o table|json] [--kubeconfig PATH]\n"
    "                             [--context NAME]\n"
    "\n"
    "Shows GPU memory shares per node and per GPU from the node's real\n"
    "allocation (annotation gpulet.dev/gpu-memory): memory, used, free and\n"
    "the pods on each GPU, and the pods bound to the node but not admitted\n"
    "yet (gpulet.dev/gpu-memory-pending) as the node's PENDING row.\n"
    "\n"
    "Options:\n"
    "  -o, --output FORMAT   table (default) or json\n"
    "  --kubeconfig PATH     kubeconfig file (default: the files of\n"
    "                        $KUBECONFIG merged, then ~/.kube/config, then\n"
    "                        the in-cluster config)\n"
    "  --context NAME        kubeconfig context (default: current-context)\n"
    "  -h, --help            this text\n";

struct Options {
  std::vector<std::string> positional;
  std::string output = "table";
  std::string kubeconfig, context;
  bool help = false;
};

absl::StatusOr<Options> ParseArgs(const std::vector<std::string>& args) {
  Options opts;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    std::string* target = nullptr;
    std::string flag = arg, value;
    bool has_value = false;
    if (const size_t eq = arg.find('=');
        absl::StartsWith(arg, "--") && eq != std::string::npos) {
      flag = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    if (flag == "-h" || flag == "--help") {
      opts.help = true;
      continue;
    }
    if (flag == "-o" || flag == "--output") target = &opts.output;
    if (flag == "--kubeconfig") target = &opts.kubeconfig;
    if (flag == "--context") target = &opts.context;
    if (target == nullptr) {
      if (absl::StartsWith(arg, "-")) {
        return absl::InvalidArgumentError("unknown flag " + arg);
      }
      opts.positional.push_back(arg);
      continue;
    }
    if (!has_value) {
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(flag + " needs a value");
      }
      value = args[++i];
    }
    *target = value;
  }
  if (opts.output != "table" && opts.output != "json") {
    return absl::InvalidArgumentError("--output: \"" + opts.output +
                                      "\" is not table or json");
  }
  return opts;
}

// The one kubeconfig file to read: --kubeconfig, else (no $KUBECONFIG,
// whose files the API client merges itself) ~/.kube/config when readable;
// empty: $KUBECONFIG, else in-cluster.
std::string KubeconfigPath(const Options& opts, const GetenvFn& getenv) {
  std::string path = opts.kubeconfig;
  if (path.empty()) {
    if (std::optional<std::string> env = getenv("KUBECONFIG");
        env.has_value() && !env->empty()) {
      return "";
    }
  }
  if (path.empty()) {
    if (std::optional<std::string> home = getenv("HOME"); home.has_value()) {
      const std::string candidate = *home + "/.kube/config";
      if (::access(candidate.c_str(), R_OK) == 0) path = candidate;
    }
  }
  return path;
}

// The Nodes to show: the one named (an error when it is missing) or all.
absl::StatusOr<std::vector<nlohmann::json>> FetchNodes(
    kube::Client& client, const std::vector<std::string>& names) {
  if (names.empty()) {
    absl::StatusOr<kube::ListResult> list = client.List("/api/v1/nodes", {});
    if (!list.ok()) return list.status();
    return std::move(list->items);
  }
  absl::StatusOr<std::string> path = kube::NodePath(names[0]);
  if (!path.ok()) return path.status();
  absl::StatusOr<nlohmann::json> node = client.Get(*path);
  if (!node.ok()) return node.status();
  return std::vector<nlohmann::json>{*std::move(node)};
}

}  // namespace

int RunKubectlGpulet(const std::vector<std::string>& args, std::ostream& out,
                     std::ostream& err, const GetenvFn& getenv) {
  absl::StatusOr<Options> opts = ParseArgs(args);
  if (!opts.ok()) {
    err << "kubectl-gpulet: " << opts.status().message() << "\n" << kUsage;
    return 2;
  }
  if (opts->help) {
    out << kUsage;
    return 0;
  }
  const std::vector<std::string>& pos = opts->positional;
  if (pos.empty() || pos[0] != "status" || pos.size() > 2) {
    err << "kubectl-gpulet: expected `status [NODE]`\n" << kUsage;
    return 2;
  }
  const std::vector<std::string> names(pos.begin() + 1, pos.end());

  kube::ApiClientOptions api_options;
  api_options.kubeconfig = KubeconfigPath(*opts, getenv);
  api_options.context = opts->context;
  api_options.in_cluster.getenv = getenv;
  api_options.client.max_attempts = 3;
  // The user's own kubeconfig: its credential plugin (EKS, GKE, AKS) runs
  // with this process's environment and terminal.
  api_options.allow_exec_plugin = true;
  absl::StatusOr<std::unique_ptr<kube::ApiClient>> api =
      kube::MakeApiClient(api_options);
  if (!api.ok()) {
    err << "kubectl-gpulet: " << api.status().message() << "\n";
    return 1;
  }
  absl::StatusOr<std::vector<nlohmann::json>> nodes =
      FetchNodes((*api)->client(), names);
  if (!nodes.ok()) {
    err << "kubectl-gpulet: " << nodes.status().message() << "\n";
    return 1;
  }
  std::vector<NodeStatus> statuses;
  int rc = 0;
  for (const nlohmann::json& node : *nodes) {
    statuses.push_back(BuildNodeStatus(AnnotationsOfNode(node)));
    if (!statuses.back().error.empty()) {
      err << "kubectl-gpulet: node " << statuses.back().node << ": "
          << statuses.back().error << "\n";
      if (!names.empty()) rc = 1;
    }
  }
  if (opts->output == "json") {
    out << StatusJson(statuses).dump(2) << "\n";
  } else {
    out << FormatStatusTable(statuses);
  }
  return rc;
}

}  // namespace gpulet::cli
