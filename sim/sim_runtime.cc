#include "sim/sim_runtime.h"

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "sim/compiled_profiles.h"
#include "sim/control_server.h"
#include "sim/profiles.h"
#include "src/base/common/logging.h"

namespace gpulet::sim {
namespace {

class ControlChannel {
 public:
  ~ControlChannel() {
    absl::MutexLock lock(&mu_);
    server_.reset();
  }

  // Never called with SimState's mutex held: the server thread takes that
  // mutex inside its handler, and stopping the server joins the thread.
  void Configure(const std::string& path) {
    absl::MutexLock lock(&mu_);
    if (server_ != nullptr && server_->path() == path) return;
    server_.reset();
    absl::StatusOr<std::unique_ptr<ControlServer>> server =
        ControlServer::Start(path, [](const std::string& line) {
          return State().HandleControlLine(line);
        });
    if (!server.ok()) {
      // Clients re-initialise often (go-nvml at every call site): say it once.
      if (warned_path_ != path) {
        GPULET_LOG(WARNING) << "NVML simulator: " << server.status().message()
                            << "; running without fault injection";
        warned_path_ = path;
      }
      return;
    }
    server_ = *std::move(server);
  }

 private:
  absl::Mutex mu_;
  std::unique_ptr<ControlServer> server_ ABSL_GUARDED_BY(mu_);
  std::string warned_path_ ABSL_GUARDED_BY(mu_);
};

ControlChannel g_control_channel;

}  // namespace

SimState& State() {
  // Leaked on purpose, see the header.
  static SimState* const state =
      std::make_unique<SimState>([](const std::string& spec)
                                     -> absl::StatusOr<Machine> {
        // A built-in profile is compiled in: no YAML to parse at init.
        std::optional<Machine> compiled =
            CompiledProfile(spec.empty() ? kDefaultProfile : spec);
        if (compiled) return *std::move(compiled);
        return LoadMachine(spec);
      }).release();
  return *state;
}

void ConfigureControlChannel() {
  const char* path = std::getenv(kSocketEnv);
  if (path == nullptr || *path == '\0') return;
  g_control_channel.Configure(path);
}

}  // namespace gpulet::sim
