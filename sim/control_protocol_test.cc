#include "sim/control_protocol.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpulet::sim {
namespace {

using ::testing::HasSubstr;

ControlCommand MustParse(const std::string& line) {
  absl::StatusOr<ControlCommand> command = ParseControlCommand(line);
  EXPECT_TRUE(command.ok()) << line << ": " << command.status();
  return command.ok() ? *command : ControlCommand{};
}

std::string ParseError(const std::string& line) {
  absl::StatusOr<ControlCommand> command = ParseControlCommand(line);
  EXPECT_FALSE(command.ok()) << line;
  EXPECT_EQ(command.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(command.status().message());
}

TEST(ParseControlCommandTest, Xid) {
  ControlCommand c = MustParse("xid 3 79\n");
  EXPECT_EQ(c.verb, ControlVerb::kXid);
  EXPECT_EQ(c.gpu, "3");
  EXPECT_EQ(c.xid, 79u);
  EXPECT_FALSE(c.gpu_instance.has_value());
  EXPECT_FALSE(c.compute_instance.has_value());
}

TEST(ParseControlCommandTest, XidWithInstances) {
  ControlCommand c =
      MustParse("xid GPU-81522b7c-0696-540e-9229-21505149f9a1 48 7 0");
  EXPECT_EQ(c.gpu, "GPU-81522b7c-0696-540e-9229-21505149f9a1");
  EXPECT_EQ(c.xid, 48u);
  EXPECT_EQ(c.gpu_instance, 7u);
  EXPECT_EQ(c.compute_instance, 0u);
}

TEST(ParseControlCommandTest, DeviceVerbs) {
  EXPECT_EQ(MustParse("dbe 0").verb, ControlVerb::kDbe);
  EXPECT_EQ(MustParse("sbe 0").verb, ControlVerb::kSbe);
  EXPECT_EQ(MustParse("lose 1").verb, ControlVerb::kLose);
  ControlCommand c = MustParse("  restore\t1 \r\n");
  EXPECT_EQ(c.verb, ControlVerb::kRestore);
  EXPECT_EQ(c.gpu, "1");
}

TEST(ParseControlCommandTest, WaitErrorDefaultsToOneCall) {
  ControlCommand c = MustParse("wait-error 999");
  EXPECT_EQ(c.verb, ControlVerb::kWaitError);
  EXPECT_EQ(c.wait_error_code, 999u);
  EXPECT_EQ(c.wait_error_count, 1u);
  EXPECT_EQ(MustParse("wait-error 15 3").wait_error_count, 3u);
}

TEST(ParseControlCommandTest, Status) {
  EXPECT_EQ(MustParse("status").verb, ControlVerb::kStatus);
}

TEST(ParseControlCommandTest, ErrorsNameTheToken) {
  EXPECT_THAT(ParseError("lsoe 1"), HasSubstr("unknown command \"lsoe\""));
  EXPECT_THAT(ParseError("xid 0 7x"), HasSubstr("bad Xid \"7x\""));
  EXPECT_THAT(ParseError("xid 0 -1"), HasSubstr("bad Xid \"-1\""));
  EXPECT_THAT(ParseError("xid 0 79 a 0"),
              HasSubstr("bad GPU instance id \"a\""));
  EXPECT_THAT(ParseError("xid 0 79 1 b"),
              HasSubstr("bad compute instance id \"b\""));
  EXPECT_THAT(ParseError("xid 0 99999999999999999999999"),
              HasSubstr("bad Xid \"99999999999999999999999\""));
  EXPECT_THAT(ParseError("wait-error x"),
              HasSubstr("bad NVML return code \"x\""));
  EXPECT_THAT(ParseError("wait-error 0"), HasSubstr("NVML_SUCCESS"));
  EXPECT_THAT(ParseError("wait-error 999 0"), HasSubstr("bad count \"0\""));
}

TEST(ParseControlCommandTest, WrongArity) {
  EXPECT_THAT(ParseError("xid 0"),
              HasSubstr("expected \"xid <gpu> <xid> [<gi> <ci>]\", got 1"));
  EXPECT_THAT(ParseError("xid 0 79 1"), HasSubstr("got 3 arguments"));
  EXPECT_THAT(ParseError("lose"), HasSubstr("expected \"lose <gpu>\""));
  EXPECT_THAT(ParseError("dbe 0 1"), HasSubstr("got 2 arguments"));
  EXPECT_THAT(ParseError("status now"), HasSubstr("expected \"status\""));
  EXPECT_THAT(ParseError("wait-error"), HasSubstr("got 0 arguments"));
  EXPECT_THAT(ParseError(""), HasSubstr("empty command"));
  EXPECT_THAT(ParseError("xid 0 79\nlose 0"), HasSubstr("one command"));
  EXPECT_THAT(ParseError(std::string(kMaxControlLineBytes + 1, 'x')),
              HasSubstr("too long"));
}

TEST(FormatControlCommandTest, RoundTrips) {
  for (const char* line :
       {"xid 0 79", "xid MIG-abc 31 1 0", "dbe 2", "sbe 3", "lose GPU-x",
        "restore 1", "wait-error 999 4", "status"}) {
    ControlCommand c = MustParse(line);
    EXPECT_EQ(FormatControlCommand(c), line);
  }
}

TEST(ControlReplyTest, OkWithAndWithoutPayload) {
  EXPECT_EQ(FormatOkReply(""), "ok\n");
  EXPECT_EQ(FormatOkReply("{}"), "ok\n{}\n");
  EXPECT_EQ(*ParseControlReply("ok\n"), "");
  EXPECT_EQ(*ParseControlReply("ok"), "");
  EXPECT_EQ(*ParseControlReply(FormatOkReply("{\"a\":1}")), "{\"a\":1}");
}

TEST(ControlReplyTest, ErrorBecomesInvalidArgument) {
  std::string reply = FormatErrorReply("unknown gpu \"9\"\nsecond line");
  EXPECT_EQ(reply, "error unknown gpu \"9\" second line\n");
  absl::StatusOr<std::string> parsed = ParseControlReply(reply);
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().message(), "unknown gpu \"9\" second line");
}

TEST(ControlReplyTest, GarbageIsInternal) {
  EXPECT_EQ(ParseControlReply("HTTP/1.1 400").status().code(),
            absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace gpulet::sim
