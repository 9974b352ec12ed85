// libFuzzer target: the memory-share annotations are read from a Node any
// client with patch rights may have edited, so their parsers must return a
// value or an error on arbitrary bytes, never crash, hang or read out of
// bounds; what parses must encode and parse back to the same text, and
// whatever it holds must be safe to pack.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "src/model/sharing/annotations.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpulet::sharing;  // NOLINT(build/namespaces)
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<Pending> pending = ParsePending(text);
  absl::StatusOr<NodeMemory> node = ParseNodeMemory(text);
  if (pending.ok()) {
    const std::string once = EncodePending(*pending);
    absl::StatusOr<Pending> again = ParsePending(once);
    if (!again.ok() || EncodePending(*again) != once) abort();
  }
  if (node.ok()) {
    const std::string once = EncodeNodeMemory(*node);
    absl::StatusOr<NodeMemory> again = ParseNodeMemory(once);
    if (!again.ok() || EncodeNodeMemory(*again) != once) abort();
    std::vector<Request> reqs =
        OutstandingRequests(pending.ok() ? *pending : Pending{}, *node);
    (void)Pack(node->gpus, reqs, {.budget = 1000});
  }
  return 0;
}
