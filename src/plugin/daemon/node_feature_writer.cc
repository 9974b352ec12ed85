#include "src/plugin/daemon/node_feature_writer.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "src/base/common/errors.h"
#include "src/base/common/logging.h"
#include "src/base/common/status_macros.h"
#include "src/model/labels/node_feature.h"

namespace gpulet::daemon {
namespace {

// A writer racing another one (a second gpulet on the node by mistake, an
// administrator's edit) gives up after this many reads.
constexpr int kAttempts = 3;

bool LostRace(const absl::Status& s) {
  return s.code() == absl::StatusCode::kAborted ||
         s.code() == absl::StatusCode::kAlreadyExists;
}

}  // namespace

absl::StatusOr<bool> NodeFeaturesServed(kube::Client& client,
                                        std::stop_token stop) {
  absl::StatusOr<nlohmann::json> list =
      client.Get(labels::kNodeFeatureGroupVersionPath, stop);
  if (list.status().code() == absl::StatusCode::kNotFound) return false;
  if (!list.ok()) {
    return common::Annotate(
        list.status(),
        "cannot tell whether the API server serves NodeFeature objects");
  }
  return labels::ListsNodeFeatures(*list);
}

absl::StatusOr<NodeFeatureWriter> NodeFeatureWriter::Create(
    kube::Client& client, std::string ns, std::string node) {
  GPULET_ASSIGN_OR_RETURN(std::string name, labels::NodeFeatureName(node));
  GPULET_RETURN_IF_ERROR(labels::NodeFeaturePath(ns, name).status());
  return NodeFeatureWriter(client, std::move(ns), std::move(node),
                           std::move(name));
}

absl::Status NodeFeatureWriter::Write(const labels::Labels& labels,
                                      std::stop_token stop) {
  absl::Status s;
  for (int i = 0; i < kAttempts; ++i) {
    s = WriteOnce(labels, stop);
    if (!LostRace(s) || stop.stop_requested()) break;
  }
  if (!s.ok()) {
    return common::Annotate(
        s, absl::StrCat("cannot write the node labels to NodeFeature ",
                        ObjectName()));
  }
  return absl::OkStatus();
}

absl::Status NodeFeatureWriter::WriteOnce(const labels::Labels& labels,
                                          std::stop_token stop) {
  GPULET_ASSIGN_OR_RETURN(std::string collection, labels::NodeFeaturePath(ns_));
  const std::string path = absl::StrCat(collection, "/", name_);
  absl::StatusOr<nlohmann::json> current = client_->Get(path, stop);
  if (current.status().code() == absl::StatusCode::kNotFound) {
    GPULET_RETURN_IF_ERROR(
        client_
            ->Create(collection, labels::NewNodeFeature(ns_, node_, labels),
                     stop)
            .status());
    GPULET_LOG(INFO) << "NodeFeature " << ObjectName() << " created ("
                     << labels.size() << " labels)";
    return absl::OkStatus();
  }
  if (!current.ok()) return current.status();
  std::optional<nlohmann::json> updated =
      labels::UpdatedNodeFeature(*current, node_, labels);
  if (!updated.has_value()) return absl::OkStatus();
  GPULET_RETURN_IF_ERROR(client_->Replace(path, *updated, stop).status());
  GPULET_LOG(INFO) << "NodeFeature " << ObjectName() << " updated ("
                   << labels.size() << " labels)";
  return absl::OkStatus();
}

}  // namespace gpulet::daemon
