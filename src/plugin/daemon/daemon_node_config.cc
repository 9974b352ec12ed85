// Daemon::Impl, per-node configuration (node_config_choice.h): the Node's
// label followed as reloads, and what is in force reported (see
// daemon_impl.h).
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "src/base/common/clock.h"
#include "src/base/common/logging.h"
#include "src/plugin/daemon/daemon_impl.h"

namespace gpulet::daemon {
namespace {

// How long the first session waits for the Node before it starts with the
// configuration chosen without its label (the default or a fallback); the
// label is followed once the API server answers.
constexpr absl::Duration kFirstListWait = absl::Seconds(10);

std::string Describe(const NodeConfigChoice& choice) {
  return choice.name.empty() ? "no configuration file"
                             : absl::StrCat("configuration ", choice.name);
}

}  // namespace

bool Daemon::Impl::StartNodeConfig() {
  if (!options_.node_config.enabled()) return true;
  absl::StatusOr<kube::Client*> api = api_.Get();
  if (!api.ok()) {
    GPULET_LOG(ERROR) << "--config-dir: cannot read node "
                      << options_.node_config.node_name
                      << "'s label: " << api.status().message();
    return false;
  }
  node_config_ = std::make_unique<NodeConfigWatch>(
      options_.node_config, **api, common::RealClock::Get(), [this] {
        node_config_changed_ = true;
        wake_.Wake();
      });
  node_config_->Start();
  if (!node_config_->WaitListed(kFirstListWait)) {
    GPULET_LOG(WARNING) << "node " << options_.node_config.node_name
                        << " not read from the API server within "
                        << absl::FormatDuration(kFirstListWait)
                        << "; starting without its label "
                        << options_.node_config.label
                        << ", which is followed once it is read";
  }
  absl::StatusOr<NodeConfigChoice> choice = ChooseConfig();
  if (!choice.ok()) return false;
  node_config_choice_ = *choice;
  absl::StatusOr<Loaded> loaded = ReadConfig();
  if (!loaded.ok()) {
    node_config_->Report("", std::string(loaded.status().message()));
    return false;
  }
  config_ = std::move(loaded->config);
  health_ = std::move(loaded->health);
  GPULET_LOG(INFO) << "node " << options_.node_config.node_name << ": "
                   << Describe(node_config_choice_);
  ReportNodeConfig("");
  return true;
}

absl::StatusOr<NodeConfigChoice> Daemon::Impl::ChooseConfig() {
  const NodeConfigOptions& o = options_.node_config;
  absl::StatusOr<std::vector<std::string>> available = ListNodeConfigs(o.dir);
  absl::StatusOr<NodeConfigChoice> choice =
      available.ok() ? ChooseNodeConfig(o, node_config_->Label(), *available)
                     : absl::StatusOr<NodeConfigChoice>(available.status());
  if (!choice.ok()) {
    GPULET_LOG(ERROR) << choice.status().message();
    node_config_->Report(node_config_choice_.name,
                         std::string(choice.status().message()));
  }
  return choice;
}

void Daemon::Impl::FollowNodeConfig(bool force) {
  absl::StatusOr<NodeConfigChoice> choice = ChooseConfig();
  if (!choice.ok()) {
    metrics_.gpulet()->config_reloads->Add({metrics::kResultError});
    return;
  }
  if (*choice == node_config_choice_ && !force) {
    ReportNodeConfig("");  // an error reported earlier is over
    return;
  }
  GPULET_LOG(INFO) << "node " << options_.node_config.node_name << ": "
                   << Describe(*choice) << " (was "
                   << Describe(node_config_choice_) << "); reloading";
  const NodeConfigChoice previous = node_config_choice_;
  node_config_choice_ = *choice;
  if (Reload()) {
    ReportNodeConfig("");
    return;
  }
  node_config_choice_ = previous;
  ReportNodeConfig(absl::StrCat(Describe(*choice),
                                " was not applied (see gpulet's log); ",
                                Describe(previous), " stays in force"));
}

void Daemon::Impl::ReportNodeConfig(const std::string& error) {
  metrics::Family* metric = metrics_.gpulet()->node_config;
  if (node_config_metric_.has_value()) metric->Remove({*node_config_metric_});
  node_config_metric_ = node_config_choice_.name;
  metric->Set({node_config_choice_.name}, 1);
  node_config_->Report(node_config_choice_.name, error);
}

}  // namespace gpulet::daemon
