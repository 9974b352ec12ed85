#include "src/net/kube/list_watcher.h"

#include <atomic>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/net/testing/fake_transport.h"

namespace gpulet::kube {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Event(const std::string& type, const std::string& name,
                  const std::string& rv) {
  return absl::StrCat(R"({"type":")", type,
                      R"(","object":{"kind":"Pod","metadata":{"name":")", name,
                      R"(","resourceVersion":")", rv, R"("}}})", "\n");
}

// A fake clock that ends the run if the script goes astray (a loop of
// failures) instead of spinning forever.
class GuardClock final : public common::Clock {
 public:
  explicit GuardClock(std::stop_source& stop) : stop_(stop) {}
  absl::Time Now() const override { return fake_.Now(); }
  absl::Time WallNow() const override { return fake_.WallNow(); }
  bool Sleep(absl::Duration d, std::stop_token token) const override {
    if (d > absl::ZeroDuration() && ++count_ > 20) stop_.request_stop();
    return fake_.Sleep(d, token);
  }
  std::vector<absl::Duration> sleeps() const { return fake_.sleeps(); }

 private:
  common::FakeClock fake_;
  std::stop_source& stop_;
  mutable std::atomic<int> count_{0};
};

TEST(ListWatcherTest, ListsWatchesResumesAndRelistsOnGone) {
  std::stop_source stop;
  GuardClock clock(stop);
  FakeTransport transport;
  Client client(transport, clock, {.qps = 0});

  transport.AddResponse(
      200, R"({"metadata":{"resourceVersion":"10"},"items":[)"
           R"({"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]})");
  // First watch: an event and a bookmark, then the server ends it.
  transport.AddStream({Event("ADDED", "c", "11"), Event("BOOKMARK", "", "15")});
  // Second watch resumes at 15 and is told that is too old.
  transport.AddStream(
      {R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}})"
       "\n"});
  transport.AddResponse(
      200,
      R"({"metadata":{"resourceVersion":"30"},"items":[{"metadata":{"name":"c"}}]})");
  // A refused watch waits a backoff, then watches again from 30.
  transport.AddResponse(500, R"({"kind":"Status","code":500,"message":"x"})");
  transport.AddStream(
      {Event("MODIFIED", "c", "31"), Event("ADDED", "d", "32")});

  std::vector<std::string> log;
  ListWatcher watcher(
      client, clock, "/api/v1/pods", {.field_selector = "spec.nodeName=n1"},
      {.on_replace =
           [&](std::vector<nlohmann::json> items, const std::string& rv) {
             log.push_back(absl::StrCat("replace ", items.size(), " @", rv));
           },
       .on_event =
           [&](const WatchEvent& e) {
             log.push_back(
                 absl::StrCat(EventTypeName(e.type), " ",
                              e.object["metadata"]["name"].get<std::string>()));
             if (e.object["metadata"]["name"] == "d") stop.request_stop();
           }},
      {.initial = absl::Seconds(1), .max = absl::Seconds(8), .jitter = 0},
      [] { return 0.5; });
  absl::Status status = watcher.Run(stop.get_token());
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled);

  EXPECT_THAT(log, ElementsAre("replace 2 @10", "ADDED c", "replace 1 @30",
                               "MODIFIED c", "ADDED d"));
  std::vector<std::string> paths;
  for (const Request& r : transport.requests()) paths.push_back(r.path);
  ASSERT_EQ(paths.size(), 6u);
  EXPECT_THAT(paths[0], HasSubstr("/api/v1/pods?fieldSelector="));
  // The first list takes any version (the watch cache), paged.
  EXPECT_THAT(paths[0], HasSubstr("limit=500&resourceVersion=0"));
  EXPECT_THAT(paths[1], HasSubstr("watch=true"));
  EXPECT_THAT(paths[1], HasSubstr("resourceVersion=10"));
  // 5 minutes stretched by half.
  EXPECT_THAT(paths[1], HasSubstr("timeoutSeconds=450"));
  EXPECT_THAT(paths[2], HasSubstr("resourceVersion=15"));
  EXPECT_THAT(paths[3], ::testing::Not(HasSubstr("watch=true")));
  // The re-list after 410: not older than what was seen, unpaged.
  EXPECT_THAT(paths[3], HasSubstr("resourceVersion=15"));
  EXPECT_THAT(paths[3], ::testing::Not(HasSubstr("limit=")));
  EXPECT_THAT(paths[4], HasSubstr("resourceVersion=30"));
  EXPECT_THAT(paths[5], HasSubstr("resourceVersion=30"));
  EXPECT_THAT(clock.sleeps(), ElementsAre(absl::Seconds(1)));
  EXPECT_EQ(watcher.stats().lists, 2);
  EXPECT_EQ(watcher.stats().gone, 1);
  EXPECT_EQ(watcher.stats().errors, 1);
  EXPECT_EQ(watcher.resource_version(), "32");
}

// A list the server cannot serve at the version asked for (expired, or
// newer than its cache) is repeated at once as a quorum read (""), and
// lists stay there until one succeeds, as client-go's reflector does.
TEST(ListWatcherTest, UnservableListVersionFallsBackToTheNewest) {
  std::stop_source stop;
  GuardClock clock(stop);
  FakeTransport transport;
  Client client(transport, clock, {.qps = 0, .max_attempts = 1});
  const std::string gone =
      R"({"type":"ERROR","object":{"kind":"Status","code":410,)"
      R"("reason":"Expired"}})"
      "\n";
  transport.AddResponse(200, R"({"metadata":{"resourceVersion":"10"}})");
  transport.AddStream({gone});
  // The re-list at 10: the server's cache has not seen it (HTTP 504).
  transport.AddResponse(
      504, R"({"kind":"Status","code":504,"reason":"Timeout","message":)"
           R"("Too large resource version: 10, current: 9","details":)"
           R"({"causes":[{"reason":"ResourceVersionTooLarge",)"
           R"("message":"Too large resource version"}]}})");
  // The quorum read fails too, and after a backoff is tried again at "".
  transport.AddError(absl::UnavailableError("connection refused"));
  transport.AddResponse(200, R"({"metadata":{"resourceVersion":"20"}})");
  transport.AddStream({gone});
  // Back to the last version seen; expired there: "" at once.
  transport.AddResponse(410, R"({"kind":"Status","code":410,)"
                             R"("reason":"Expired"})");
  transport.AddResponse(200, R"({"metadata":{"resourceVersion":"30"}})");

  std::vector<std::string> lists;
  ListWatcher watcher(
      client, clock, "/api/v1/pods", {},
      {.on_replace =
           [&](std::vector<nlohmann::json>, const std::string& rv) {
             lists.push_back(rv);
             if (rv == "30") stop.request_stop();
           }},
      {.initial = absl::Seconds(1), .max = absl::Seconds(8), .jitter = 0});
  EXPECT_EQ(watcher.Run(stop.get_token()).code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(lists, ElementsAre("10", "20", "30"));
  std::vector<std::string> asked;
  for (const Request& r : transport.requests()) {
    if (r.path.find("watch=true") != std::string::npos) continue;
    const size_t at = r.path.find("resourceVersion=");
    asked.push_back(at == std::string::npos ? "" : r.path.substr(at + 16));
  }
  EXPECT_THAT(asked, ElementsAre("0", "10", "", "", "20", ""));
  // Only the refused connection waited: the fallbacks went at once.
  EXPECT_THAT(clock.sleeps(), ElementsAre(absl::Seconds(1)));
  EXPECT_EQ(watcher.stats().lists, 3);
  EXPECT_EQ(watcher.stats().errors, 1);
}

TEST(ListWatcherTest, ListFailuresBackOffExponentially) {
  std::stop_source stop;
  GuardClock clock(stop);
  FakeTransport transport;
  Client client(transport, clock, {.qps = 0, .max_attempts = 1});
  for (int i = 0; i < 3; ++i) {
    transport.AddResponse(403, R"({"kind":"Status","code":403})");
  }
  transport.AddResponse(200, R"({"metadata":{"resourceVersion":"1"}})");
  ListWatcher watcher(
      client, clock, "/api/v1/pods", {},
      {.on_replace = [&](auto, const std::string&) { stop.request_stop(); }},
      {.initial = absl::Seconds(1), .max = absl::Seconds(3), .jitter = 0});
  EXPECT_EQ(watcher.Run(stop.get_token()).code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(clock.sleeps(), ElementsAre(absl::Seconds(1), absl::Seconds(2),
                                          absl::Seconds(3)));
}

}  // namespace
}  // namespace gpulet::kube
