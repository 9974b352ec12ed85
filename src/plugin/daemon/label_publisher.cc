#include "src/plugin/daemon/label_publisher.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "src/base/common/clock.h"
#include "src/base/common/errors.h"
#include "src/base/common/file_util.h"
#include "src/base/common/logging.h"
#include "src/base/common/status_macros.h"
#include "src/gpu/device/discovery.h"
#include "src/model/labels/node_patch.h"
#include "src/net/kube/api_path.h"

namespace gpulet::daemon {
namespace {

constexpr char kTimestampLabel[] = "nvidia.com/gfd.timestamp";

}  // namespace

absl::StatusOr<std::unique_ptr<LabelPublisher>> LabelPublisher::Create(
    LabelOptions options, kube::Client* shared) {
  if (options.node_name.empty()) {
    return std::make_unique<LabelPublisher>(std::move(options), nullptr);
  }
  const std::string context =
      absl::StrCat("cannot patch the labels of node ", options.node_name);
  if (absl::Status s = kube::ValidateName("node name", options.node_name);
      !s.ok()) {
    return common::Annotate(s, context);
  }
  if (shared != nullptr) {
    return std::make_unique<LabelPublisher>(std::move(options), shared);
  }
  kube::ApiClientOptions api_options;
  api_options.kubeconfig = options.kubeconfig;
  absl::StatusOr<std::unique_ptr<kube::ApiClient>> api =
      kube::MakeApiClient(api_options);
  if (!api.ok()) return common::Annotate(api.status(), context);
  auto publisher =
      std::make_unique<LabelPublisher>(std::move(options), &(*api)->client());
  publisher->owned_api_ = *std::move(api);
  return publisher;
}

LabelPublisher::LabelPublisher(LabelOptions options, kube::Client* client)
    : options_(std::move(options)), client_(client) {
  if (client_ != nullptr && !options_.node_name.empty() &&
      options_.background_patch) {
    patcher_ = std::jthread([this](std::stop_token stop) { PatchLoop(stop); });
  }
}

LabelPublisher::~LabelPublisher() {
  // Before the client goes: the thread uses it.
  if (patcher_.joinable()) {
    patcher_.request_stop();
    patcher_.join();
  }
}

labels::Labels LabelPublisher::Compute(const device::Node& node,
                                       const config::Config& config) const {
  labels::NodeFacts facts;
  if (!options_.machine_type_file.empty()) {
    absl::StatusOr<std::string> machine =
        common::ReadFile(options_.machine_type_file);
    if (machine.ok()) {
      facts.machine_type = std::string(absl::StripAsciiWhitespace(*machine));
    } else {
      GPULET_VLOG(1) << "machine type unknown: " << machine.status().message();
    }
  }
  for (const device::Gpu& gpu : node.gpus) {
    std::optional<std::string> pci_class =
        device::ReadSysfsPciClass(options_.sysfs_root, gpu.bus_id);
    if (pci_class.has_value()) facts.pci_class[gpu.index] = *pci_class;
  }
  if (options_.timestamp)
    facts.timestamp = absl::ToUnixSeconds(common::RealClock::Get().WallNow());
  return labels::ComputeLabels(node, config, facts);
}

absl::StatusOr<labels::Labels> LabelPublisher::Publish(
    const device::Node& node, const config::Config& config) {
  labels::Labels labels = Compute(node, config);
  if (!options_.output_file.empty()) {
    GPULET_RETURN_IF_ERROR(WriteFeatureFile(labels));
  }
  if (patcher_.joinable()) {
    absl::MutexLock lock(&mu_);
    pending_ = labels;
  }
  return labels;
}

absl::Status LabelPublisher::WriteFeatureFile(
    const labels::Labels& labels) const {
  common::WriteOptions write;
  write.mode = 0644;
  absl::Status s = common::WriteFileAtomic(
      options_.output_file, labels::FeatureFileText(labels), write);
  if (!s.ok()) {
    return common::Annotate(s, absl::StrCat("cannot write the node labels to ",
                                            options_.output_file));
  }
  return absl::OkStatus();
}

absl::Status LabelPublisher::PatchNode(const labels::Labels& labels,
                                       std::stop_token stop) {
  if (client_ == nullptr || options_.node_name.empty()) {
    return absl::FailedPreconditionError("no node to patch the labels onto");
  }
  const std::string context =
      absl::StrCat("cannot patch the labels of node ", options_.node_name);
  absl::StatusOr<std::string> path = kube::NodePath(options_.node_name);
  if (!path.ok()) return common::Annotate(path.status(), context);
  labels::Labels wanted = labels;
  wanted.erase(kTimestampLabel);
  absl::StatusOr<nlohmann::json> current = client_->Get(*path, stop);
  if (!current.ok()) return common::Annotate(current.status(), context);
  std::optional<nlohmann::json> patch =
      labels::NodeLabelPatch(*current, wanted);
  if (!patch.has_value()) return absl::OkStatus();
  absl::StatusOr<nlohmann::json> patched =
      client_->MergePatch(*path, *patch, stop);
  if (!patched.ok()) return common::Annotate(patched.status(), context);
  GPULET_LOG(INFO) << "node " << options_.node_name << " labelled ("
                   << wanted.size() << " labels)";
  return absl::OkStatus();
}

void LabelPublisher::PatchLoop(std::stop_token stop) {
  std::stop_callback wake(stop, [this] {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  });
  absl::Duration wait = absl::InfiniteDuration();
  // The labels the Node should carry: the newest published.
  std::optional<labels::Labels> current;
  while (true) {
    labels::Labels labels;
    {
      absl::MutexLock lock(&mu_);
      mu_.AwaitWithTimeout(absl::Condition(this, &LabelPublisher::Woken), wait);
      if (stopping_) return;
      if (pending_.has_value()) {
        current = *std::move(pending_);
        pending_.reset();
      }
      if (!current.has_value()) continue;
      labels = *current;
    }
    absl::Status s = PatchNode(labels, stop);
    if (s.ok()) {
      wait = options_.resync;
      continue;
    }
    if (stop.stop_requested()) return;
    GPULET_LOG(ERROR) << s.message() << "; trying again in "
                      << absl::FormatDuration(options_.retry);
    wait = options_.retry;
  }
}

}  // namespace gpulet::daemon
