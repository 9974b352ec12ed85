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
#include "src/model/labels/node_feature.h"
#include "src/model/labels/node_patch.h"
#include "src/net/kube/api_path.h"

namespace gpulet::daemon {
namespace {

constexpr char kTimestampLabel[] = "nvidia.com/gfd.timestamp";

// The names the NodeFeature object needs, when it may be written; auto
// without a node name is off.
absl::Status CheckNodeFeatureOptions(LabelOptions& options) {
  if (options.node_feature_api == NodeFeatureApi::kOff) return absl::OkStatus();
  const bool on = options.node_feature_api == NodeFeatureApi::kOn;
  if (options.feature_node.empty()) {
    if (on) {
      return absl::InvalidArgumentError(
          "the NodeFeature API needs the node's name (NODE_NAME)");
    }
    GPULET_VLOG(1) << "node labels: no node name, no NodeFeature object";
    options.node_feature_api = NodeFeatureApi::kOff;
    return absl::OkStatus();
  }
  if (on && !options.node_name.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the labels of node ", options.node_name,
        " can be merge-patched onto the Node or written to a NodeFeature "
        "object, not both: leave out the Node patch or turn the NodeFeature "
        "API off"));
  }
  absl::StatusOr<std::string> name =
      labels::NodeFeatureName(options.feature_node);
  absl::Status s = name.status();
  if (s.ok()) s = labels::NodeFeaturePath(options.feature_namespace).status();
  if (!s.ok()) {
    return common::Annotate(s,
                            "cannot write the node labels to a NodeFeature "
                            "object");
  }
  return absl::OkStatus();
}

bool NeedsApi(const LabelOptions& options) {
  return !options.node_name.empty() ||
         options.node_feature_api != NodeFeatureApi::kOff;
}

// Auto's question: does the API server serve nodefeatures? The answer is
// logged as the choice it makes.
absl::StatusOr<bool> AskNodeFeatureApi(const LabelOptions& options,
                                       kube::Client& client,
                                       std::stop_token stop) {
  absl::StatusOr<bool> served = NodeFeaturesServed(client, stop);
  if (served.ok() && !*served) {
    GPULET_LOG(INFO) << "node labels: the API server does not serve "
                        "nfd.k8s-sigs.io/v1alpha1 nodefeatures; "
                     << (options.node_name.empty()
                             ? "the feature file"
                             : absl::StrCat("patching node ",
                                            options.node_name));
  }
  return served;
}

void LogNodeFeatureChoice(const LabelOptions& options) {
  GPULET_LOG(INFO) << "node labels: NodeFeature " << options.feature_namespace
                   << "/" << labels::kNodeFeatureNamePrefix
                   << options.feature_node
                   << " (nfd.k8s-sigs.io/v1alpha1), not the feature file"
                   << (options.node_name.empty() ? "" : " nor a Node patch");
}

// On the caller's thread (no background thread): auto becomes on or off by
// what the API server serves; on turns the file and the Node patch off.
absl::Status ChooseNodeFeatureApi(LabelOptions& options, kube::Client& client) {
  if (options.node_feature_api == NodeFeatureApi::kAuto) {
    GPULET_ASSIGN_OR_RETURN(bool served,
                            AskNodeFeatureApi(options, client, {}));
    options.node_feature_api =
        served ? NodeFeatureApi::kOn : NodeFeatureApi::kOff;
  }
  if (options.node_feature_api != NodeFeatureApi::kOn) return absl::OkStatus();
  LogNodeFeatureChoice(options);
  options.output_file.clear();
  options.node_name.clear();
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<LabelPublisher>> LabelPublisher::Create(
    LabelOptions options, kube::Client* shared) {
  if (!options.node_name.empty()) {
    if (absl::Status s = kube::ValidateName("node name", options.node_name);
        !s.ok()) {
      return common::Annotate(
          s,
          absl::StrCat("cannot patch the labels of node ", options.node_name));
    }
  }
  GPULET_RETURN_IF_ERROR(CheckNodeFeatureOptions(options));
  if (!NeedsApi(options)) {
    return std::make_unique<LabelPublisher>(std::move(options), nullptr);
  }
  std::unique_ptr<kube::ApiClient> owned;
  kube::Client* client = shared;
  if (client == nullptr) {
    kube::ApiClientOptions api_options;
    api_options.kubeconfig = options.kubeconfig;
    absl::StatusOr<std::unique_ptr<kube::ApiClient>> api =
        kube::MakeApiClient(api_options);
    if (!api.ok() && options.node_feature_api == NodeFeatureApi::kAuto &&
        options.node_name.empty()) {
      GPULET_LOG(INFO) << "node labels: the feature file, not a NodeFeature "
                          "object (no API server: "
                       << api.status().message() << ")";
      options.node_feature_api = NodeFeatureApi::kOff;
      return std::make_unique<LabelPublisher>(std::move(options), nullptr);
    }
    if (!api.ok()) {
      return common::Annotate(
          api.status(), "cannot reach the API server for the node labels");
    }
    owned = *std::move(api);
    client = &owned->client();
  }
  // With a thread, the thread asks (the caller, a device plugin starting,
  // must not wait for the API server).
  if (!options.background_patch) {
    GPULET_RETURN_IF_ERROR(ChooseNodeFeatureApi(options, *client));
  }
  auto publisher = std::make_unique<LabelPublisher>(std::move(options), client);
  publisher->owned_api_ = std::move(owned);
  return publisher;
}

LabelPublisher::LabelPublisher(LabelOptions options, kube::Client* client)
    : options_(std::move(options)),
      client_(client),
      write_file_(!options_.output_file.empty()),
      patch_node_(!options_.node_name.empty()) {
  if (client_ != nullptr && options_.node_feature_api == NodeFeatureApi::kOn) {
    UseNodeFeature();
  }
  choice_pending_ = client_ != nullptr && options_.background_patch &&
                    options_.node_feature_api == NodeFeatureApi::kAuto &&
                    !options_.feature_node.empty();
  if (client_ != nullptr &&
      (patch_node_ || node_feature_.has_value() || choice_pending_) &&
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

void LabelPublisher::UseNodeFeature() {
  absl::StatusOr<NodeFeatureWriter> writer = NodeFeatureWriter::Create(
      *client_, options_.feature_namespace, options_.feature_node);
  if (!writer.ok()) return;
  node_feature_.emplace(*std::move(writer));
  absl::MutexLock lock(&mu_);
  write_file_ = false;
  patch_node_ = false;
}

absl::StatusOr<labels::Labels> LabelPublisher::Publish(
    const device::Node& node, const config::Config& config) {
  labels::Labels labels = Compute(node, config);
  bool write_file = false;
  {
    absl::MutexLock lock(&mu_);
    // Until the thread has asked the API server, it writes the file too.
    if (choice_pending_) {
      pending_ = labels;
      return labels;
    }
    write_file = write_file_;
  }
  if (write_file) GPULET_RETURN_IF_ERROR(WriteFeatureFile(labels));
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

absl::Status LabelPublisher::WriteApi(const labels::Labels& labels,
                                      std::stop_token stop) {
  if (node_feature_.has_value()) {
    GPULET_RETURN_IF_ERROR(node_feature_->Write(labels, stop));
  }
  bool patch = false;
  {
    absl::MutexLock lock(&mu_);
    patch = patch_node_;
  }
  if (patch) GPULET_RETURN_IF_ERROR(PatchNode(labels, stop));
  return absl::OkStatus();
}

absl::Status LabelPublisher::ChooseInBackground(const labels::Labels& labels,
                                                std::stop_token stop) {
  {
    absl::MutexLock lock(&mu_);
    if (!choice_pending_) return absl::OkStatus();
  }
  GPULET_ASSIGN_OR_RETURN(bool served,
                          AskNodeFeatureApi(options_, *client_, stop));
  if (served) {
    LogNodeFeatureChoice(options_);
    UseNodeFeature();
  }
  bool write_file = false;
  {
    absl::MutexLock lock(&mu_);
    choice_pending_ = false;
    write_file = write_file_;
  }
  // The file Publish left to the choice.
  if (write_file) {
    if (absl::Status s = WriteFeatureFile(labels); !s.ok()) {
      GPULET_LOG(ERROR) << s.message();
    }
  }
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
    absl::Status s = ChooseInBackground(labels, stop);
    if (s.ok()) s = WriteApi(labels, stop);
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
