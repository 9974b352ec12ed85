#include "src/net/kube/watch_decoder.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::kube {
namespace {

using ::testing::HasSubstr;

const std::string kStream =
    R"({"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"a","resourceVersion":"5"}}})"
    "\n"
    R"({"type":"MODIFIED","object":{"kind":"Pod","metadata":{"name":"\u00e9t\u00e9","resourceVersion":"6"}}})"
    "\n"
    R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"9"}}})"
    "\n"
    R"({"type":"DELETED","object":{"kind":"Pod","metadata":{"name":"a","resourceVersion":"10"}}})"
    "\n"
    R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}})"
    "\n";

std::vector<std::string> Summaries(const std::vector<WatchEvent>& events) {
  std::vector<std::string> out;
  for (const WatchEvent& e : events) {
    out.push_back(std::string(EventTypeName(e.type)) + " " +
                  ResourceVersionOf(e.object));
  }
  return out;
}

TEST(WatchDecoderTest, SameEventsWhereverTheStreamIsCut) {
  const std::vector<std::string> want = {"ADDED 5", "MODIFIED 6", "BOOKMARK 9",
                                         "DELETED 10", "ERROR "};
  for (size_t piece = 1; piece <= kStream.size(); ++piece) {
    WatchDecoder decoder;
    std::vector<WatchEvent> events;
    for (size_t at = 0; at < kStream.size(); at += piece) {
      ASSERT_TRUE(decoder.Feed(kStream.substr(at, piece), &events).ok());
    }
    ASSERT_TRUE(decoder.Finish(&events).ok());
    ASSERT_EQ(Summaries(events), want) << "pieces of " << piece;
    EXPECT_EQ(events[1].object["metadata"]["name"], "\u00e9t\u00e9");
  }
}

TEST(WatchDecoderTest, LastLineWithoutNewlineAndBlankLines) {
  WatchDecoder decoder;
  std::vector<WatchEvent> events;
  ASSERT_TRUE(decoder.Feed("\n\r\n", &events).ok());
  ASSERT_TRUE(decoder.Feed(R"({"type":"ADDED","object":{}})", &events).ok());
  EXPECT_TRUE(events.empty());
  ASSERT_TRUE(decoder.Finish(&events).ok());
  EXPECT_EQ(events.size(), 1u);
}

TEST(WatchDecoderTest, RejectsWhatIsNotAnEvent) {
  const char* lines[] = {
      "not json",
      "[1,2]",
      R"({"object":{}})",
      R"({"type":"SPLIT","object":{}})",
      R"({"type":"ADDED","object":"x"})",
      R"({"type":"ADDED"})",
      R"({"type":7,"object":{}})",
  };
  for (const char* line : lines) {
    WatchDecoder decoder;
    std::vector<WatchEvent> events;
    absl::Status status = decoder.Feed(std::string(line) + "\n", &events);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << line;
    EXPECT_THAT(status.message(), HasSubstr("watch stream")) << line;
    // Failed for good: later input is not decoded.
    EXPECT_FALSE(decoder
                     .Feed(R"({"type":"ADDED","object":{}})"
                           "\n",
                           &events)
                     .ok());
    EXPECT_TRUE(events.empty());
  }
}

TEST(WatchDecoderTest, BoundsTheLineLength) {
  WatchDecoder decoder(/*max_line_bytes=*/64);
  std::vector<WatchEvent> events;
  ASSERT_TRUE(decoder.Feed(std::string(40, ' '), &events).ok());
  absl::Status status = decoder.Feed(std::string(40, ' '), &events);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("longer than 64 bytes"));
}

TEST(ResourceVersionOfTest, MissingOrMistypedIsEmpty) {
  EXPECT_EQ(ResourceVersionOf(nlohmann::json::parse(
                R"({"metadata":{"resourceVersion":"7"}})")),
            "7");
  EXPECT_EQ(ResourceVersionOf(
                nlohmann::json::parse(R"({"metadata":{"resourceVersion":7}})")),
            "");
  EXPECT_EQ(ResourceVersionOf(nlohmann::json::parse(R"({"metadata":1})")), "");
  EXPECT_EQ(ResourceVersionOf(nlohmann::json::parse("[]")), "");
}

}  // namespace
}  // namespace gpulet::kube
