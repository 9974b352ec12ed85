// Strict JSON decoding and canonical encoding of the memory-share
// annotations. A Reader collects the first error with its field path.
#include "src/model/sharing/annotations.h"

#include <algorithm>
#include <initializer_list>
#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace gpulet::sharing {
namespace {

using Json = nlohmann::ordered_json;

constexpr char kTimeFormat[] = "%Y-%m-%dT%H:%M:%E*SZ";
// Far beyond any node, and small enough that sums of units never overflow.
constexpr int64_t kMaxCount = 1'000'000'000;

class Reader {
 public:
  explicit Reader(std::string_view what) : what_(what) {}

  absl::Status status() const { return status_; }
  bool ok() const { return status_.ok(); }

  void Fail(const std::string& path, std::string_view why) {
    if (!status_.ok()) return;
    status_ = absl::InvalidArgumentError(
        absl::StrCat(what_, ": ", path.empty() ? "(top level)" : path, ": ",
                     std::string(why)));
  }

  bool Object(const Json& j, const std::string& path,
              std::initializer_list<std::string_view> known) {
    if (!j.is_object()) {
      Fail(path, absl::StrCat("want an object, got ", j.type_name()));
      return false;
    }
    for (const auto& item : j.items()) {
      bool found = false;
      for (std::string_view k : known) found = found || item.key() == k;
      if (!found) {
        std::string names;
        for (std::string_view k : known) {
          absl::StrAppend(&names, names.empty() ? "" : ", ", std::string(k));
        }
        Fail(path, absl::StrCat("unknown field \"", item.key(),
                                "\" (known: ", names, ")"));
        return false;
      }
    }
    return true;
  }

  const Json* Field(const Json& obj, const char* key, const std::string& path,
                    bool required) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) {
      if (required) Fail(At(path, key), "missing");
      return nullptr;
    }
    return &*it;
  }

  std::string String(const Json& obj, const char* key, const std::string& path,
                     bool required) {
    const Json* j = Field(obj, key, path, required);
    if (j == nullptr) return "";
    if (!j->is_string()) {
      Fail(At(path, key), absl::StrCat("want a string, got ", j->type_name()));
      return "";
    }
    std::string s = j->get<std::string>();
    if (required && s.empty()) Fail(At(path, key), "must not be empty");
    return s;
  }

  int64_t Int(const Json& obj, const char* key, const std::string& path,
              int64_t min, int64_t max = kMaxCount) {
    const Json* j = Field(obj, key, path, /*required=*/true);
    if (j == nullptr) return 0;
    bool too_big =
        j->is_number_unsigned() &&
        j->get<uint64_t>() >
            static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    if (!j->is_number_integer() || too_big) {
      Fail(At(path, key), absl::StrCat("want an integer, got ", j->dump()));
      return 0;
    }
    int64_t v = j->get<int64_t>();
    if (v < min) {
      Fail(At(path, key), absl::StrCat("must be at least ", min, ", got ", v));
    } else if (v > max) {
      Fail(At(path, key), absl::StrCat("must be at most ", max, ", got ", v));
    }
    return v;
  }

  bool Bool(const Json& obj, const char* key, const std::string& path) {
    const Json* j = Field(obj, key, path, /*required=*/true);
    if (j == nullptr) return false;
    if (!j->is_boolean()) {
      Fail(At(path, key), absl::StrCat("want true or false, got ", j->dump()));
      return false;
    }
    return j->get<bool>();
  }

  absl::Time Time(const Json& obj, const char* key, const std::string& path) {
    std::string s = String(obj, key, path, /*required=*/true);
    absl::Time t;
    std::string err;
    // ParseTime also takes "infinite-future", which no other reader would.
    if (ok() && (!absl::ParseTime(absl::RFC3339_full, s, &t, &err) ||
                 t == absl::InfiniteFuture() || t == absl::InfinitePast())) {
      Fail(At(path, key), absl::StrCat("not an RFC 3339 time: \"", s, "\""));
    }
    return t;
  }

  // The array at obj[key] (required); nullptr after an error.
  const Json* Array(const Json& obj, const char* key, const std::string& path) {
    const Json* j = Field(obj, key, path, /*required=*/true);
    if (j != nullptr && !j->is_array()) {
      Fail(At(path, key), absl::StrCat("want an array, got ", j->type_name()));
      return nullptr;
    }
    return j;
  }

  void Version(const Json& obj) {
    if (Int(obj, "v", "", 0) != 1 && ok()) {
      Fail("v", "unsupported version (this gpulet reads version 1)");
    }
  }

  static std::string At(const std::string& path, std::string_view key) {
    return path.empty() ? std::string(key)
                        : absl::StrCat(path, ".", std::string(key));
  }
  static std::string Item(const std::string& path, const char* key, size_t i) {
    return absl::StrCat(At(path, key), "[", i, "]");
  }

 private:
  std::string what_;
  absl::Status status_;
};

absl::StatusOr<Json> ParseJson(std::string_view text, std::string_view what) {
  Json j = Json::parse(text.begin(), text.end(), nullptr,
                       /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(what), ": not valid JSON"));
  }
  return j;
}

std::string TimeText(absl::Time t) {
  return absl::FormatTime(kTimeFormat, t, absl::UTCTimeZone());
}

std::string PodKey(std::string_view uid, std::string_view ns,
                   std::string_view name) {
  return uid.empty() ? absl::StrCat(std::string(ns), "/", std::string(name))
                     : std::string(uid);
}

}  // namespace

absl::StatusOr<Pending> ParsePending(std::string_view text) {
  const std::string what =
      absl::StrCat("annotation ", std::string(kPendingAnnotation));
  auto j = ParseJson(text, what);
  if (!j.ok()) return j.status();
  Reader r(what);
  Pending out;
  if (!r.Object(*j, "", {"v", "pods"})) return r.status();
  r.Version(*j);
  const Json* pods = r.Array(*j, "pods", "");
  for (size_t i = 0; pods != nullptr && r.ok() && i < pods->size(); ++i) {
    const std::string p = Reader::Item("", "pods", i);
    const Json& pj = (*pods)[i];
    if (!r.Object(pj, p, {"uid", "namespace", "name", "time", "containers"})) {
      break;
    }
    PendingPod pod;
    pod.uid = r.String(pj, "uid", p, /*required=*/false);
    pod.ns = r.String(pj, "namespace", p, /*required=*/true);
    pod.name = r.String(pj, "name", p, /*required=*/true);
    pod.time = r.Time(pj, "time", p);
    const Json* cs = r.Array(pj, "containers", p);
    for (size_t k = 0; cs != nullptr && r.ok() && k < cs->size(); ++k) {
      const std::string c = Reader::Item(p, "containers", k);
      if (!r.Object((*cs)[k], c, {"name", "units"})) break;
      PendingContainer pc;
      pc.name = r.String((*cs)[k], "name", c, /*required=*/true);
      pc.units = r.Int((*cs)[k], "units", c, 1);
      pod.containers.push_back(std::move(pc));
    }
    out.pods.push_back(std::move(pod));
  }
  if (!r.ok()) return r.status();
  return out;
}

std::string EncodePending(const Pending& pending) {
  Json pods = Json::array();
  for (const PendingPod& pod : pending.pods) {
    Json cs = Json::array();
    for (const PendingContainer& c : pod.containers) {
      cs.push_back(Json{{"name", c.name}, {"units", c.units}});
    }
    Json pj = Json::object();
    if (!pod.uid.empty()) pj["uid"] = pod.uid;
    pj["namespace"] = pod.ns;
    pj["name"] = pod.name;
    pj["time"] = TimeText(pod.time);
    pj["containers"] = std::move(cs);
    pods.push_back(std::move(pj));
  }
  Json j = Json::object();
  j["v"] = 1;
  j["pods"] = std::move(pods);
  return j.dump();
}

namespace {

// node.placements; each names its GPU and lists exactly `units` unit IDs.
void ParsePlacements(Reader& r, const Json& j, NodeMemory* out) {
  const Json* ps = r.Array(j, "placements", "");
  for (size_t i = 0; ps != nullptr && r.ok() && i < ps->size(); ++i) {
    const std::string p = Reader::Item("", "placements", i);
    const Json& pj = (*ps)[i];
    if (!r.Object(pj, p, {"gpu", "units", "ids", "time"})) break;
    Placement placed;
    placed.gpu = r.String(pj, "gpu", p, /*required=*/true);
    placed.units = r.Int(pj, "units", p, 1);
    placed.time = r.Time(pj, "time", p);
    const Json* ids = r.ok() ? r.Array(pj, "ids", p) : nullptr;
    for (size_t k = 0; ids != nullptr && r.ok() && k < ids->size(); ++k) {
      if (!(*ids)[k].is_string() || (*ids)[k].get<std::string>().empty()) {
        r.Fail(Reader::Item(p, "ids", k),
               "want a unit ID (a non-empty string)");
        break;
      }
      placed.ids.push_back((*ids)[k].get<std::string>());
    }
    if (r.ok() && static_cast<int64_t>(placed.ids.size()) != placed.units) {
      r.Fail(Reader::At(p, "ids"),
             absl::StrCat("lists ", placed.ids.size(),
                          " unit IDs, want units (", placed.units, ")"));
    }
    out->placements.push_back(std::move(placed));
  }
}

}  // namespace

absl::StatusOr<NodeMemory> ParseNodeMemory(std::string_view text) {
  const std::string what =
      absl::StrCat("annotation ", std::string(kNodeAnnotation));
  auto j = ParseJson(text, what);
  if (!j.ok()) return j.status();
  Reader r(what);
  NodeMemory out;
  if (!r.Object(*j, "",
                {"v", "resource", "unitMiB", "observed", "gpus", "pods",
                 "placements"})) {
    return r.status();
  }
  r.Version(*j);
  out.resource = r.String(*j, "resource", "", /*required=*/true);
  out.unit_mib = r.Int(*j, "unitMiB", "", 1, int64_t{1} << 20);
  out.observed = r.Time(*j, "observed", "");
  const Json* gpus = r.Array(*j, "gpus", "");
  for (size_t i = 0; gpus != nullptr && r.ok() && i < gpus->size(); ++i) {
    const std::string p = Reader::Item("", "gpus", i);
    const Json& gj = (*gpus)[i];
    if (!r.Object(gj, p, {"uuid", "index", "units", "used", "healthy"})) break;
    GpuSpace g;
    g.uuid = r.String(gj, "uuid", p, /*required=*/true);
    g.index = static_cast<int>(r.Int(gj, "index", p, 0, 1 << 20));
    g.units = r.Int(gj, "units", p, 0);
    g.used = r.Int(gj, "used", p, 0);
    g.healthy = r.Bool(gj, "healthy", p);
    out.gpus.push_back(std::move(g));
  }
  const Json* pods = r.ok() ? r.Array(*j, "pods", "") : nullptr;
  for (size_t i = 0; pods != nullptr && r.ok() && i < pods->size(); ++i) {
    const std::string p = Reader::Item("", "pods", i);
    const Json& pj = (*pods)[i];
    if (!r.Object(pj, p, {"uid", "namespace", "name", "containers"})) break;
    UsedPod pod;
    pod.uid = r.String(pj, "uid", p, /*required=*/false);
    pod.ns = r.String(pj, "namespace", p, /*required=*/true);
    pod.name = r.String(pj, "name", p, /*required=*/true);
    const Json* cs = r.Array(pj, "containers", p);
    for (size_t k = 0; cs != nullptr && r.ok() && k < cs->size(); ++k) {
      const std::string c = Reader::Item(p, "containers", k);
      if (!r.Object((*cs)[k], c, {"name", "gpu", "units"})) break;
      UsedContainer uc;
      uc.name = r.String((*cs)[k], "name", c, /*required=*/true);
      uc.gpu = r.String((*cs)[k], "gpu", c, /*required=*/true);
      uc.units = r.Int((*cs)[k], "units", c, 1);
      pod.containers.push_back(std::move(uc));
    }
    out.pods.push_back(std::move(pod));
  }
  if (r.ok() && j->contains("placements")) ParsePlacements(r, *j, &out);
  if (!r.ok()) return r.status();
  return out;
}

std::string EncodeNodeMemory(const NodeMemory& node) {
  Json gpus = Json::array();
  for (const GpuSpace& g : node.gpus) {
    gpus.push_back(Json{{"uuid", g.uuid},
                        {"index", g.index},
                        {"units", g.units},
                        {"used", g.used},
                        {"healthy", g.healthy}});
  }
  Json pods = Json::array();
  for (const UsedPod& pod : node.pods) {
    Json cs = Json::array();
    for (const UsedContainer& c : pod.containers) {
      cs.push_back(Json{{"name", c.name}, {"gpu", c.gpu}, {"units", c.units}});
    }
    Json pj = Json::object();
    pj["namespace"] = pod.ns;
    pj["name"] = pod.name;
    if (!pod.uid.empty()) pj["uid"] = pod.uid;
    pj["containers"] = std::move(cs);
    pods.push_back(std::move(pj));
  }
  Json j = Json::object();
  j["v"] = 1;
  j["resource"] = node.resource;
  j["unitMiB"] = node.unit_mib;
  j["observed"] = TimeText(node.observed);
  j["gpus"] = std::move(gpus);
  j["pods"] = std::move(pods);
  if (!node.placements.empty()) {
    Json placements = Json::array();
    for (const Placement& p : node.placements) {
      placements.push_back(Json{{"gpu", p.gpu},
                                {"units", p.units},
                                {"ids", p.ids},
                                {"time", TimeText(p.time)}});
    }
    j["placements"] = std::move(placements);
  }
  return j.dump();
}

bool SamePod(std::string_view uid_a, std::string_view ns_a,
             std::string_view name_a, std::string_view uid_b,
             std::string_view ns_b, std::string_view name_b) {
  if (!uid_a.empty() && !uid_b.empty()) return uid_a == uid_b;
  return ns_a == ns_b && name_a == name_b;
}

namespace {

// The containers of `pod` that node lists, or nullptr when it does not list
// the pod at all.
const UsedPod* FindListed(const PendingPod& pod, const NodeMemory& node) {
  for (const UsedPod& used : node.pods) {
    if (SamePod(pod.uid, pod.ns, pod.name, used.uid, used.ns, used.name)) {
      return &used;
    }
  }
  return nullptr;
}

bool HoldsContainer(const UsedPod* used, const std::string& name) {
  return used != nullptr &&
         std::any_of(used->containers.begin(), used->containers.end(),
                     [&](const UsedContainer& c) { return c.name == name; });
}

}  // namespace

bool Admitted(const PendingPod& pod, const NodeMemory& node) {
  const UsedPod* used = FindListed(pod, node);
  return used != nullptr &&
         std::all_of(pod.containers.begin(), pod.containers.end(),
                     [&](const PendingContainer& c) {
                       return HoldsContainer(used, c.name);
                     });
}

std::vector<Request> OutstandingRequests(const Pending& pending,
                                         const NodeMemory& node) {
  std::vector<Request> out;
  for (const PendingPod& pod : pending.pods) {
    // The kubelet allocates a pod's containers one after the other: a pod
    // it lists may still have containers waiting for their units.
    const UsedPod* used = FindListed(pod, node);
    const std::string key = PodKey(pod.uid, pod.ns, pod.name);
    for (const PendingContainer& c : pod.containers) {
      if (HoldsContainer(used, c.name)) continue;
      out.push_back(Request{absl::StrCat(key, "/", c.name), c.units});
    }
  }
  for (const Placement& p : node.placements) {
    auto it = std::find_if(out.begin(), out.end(), [&](const Request& r) {
      return r.units == p.units;
    });
    if (it != out.end()) out.erase(it);
  }
  return out;
}

}  // namespace gpulet::sharing
