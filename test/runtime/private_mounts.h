// For exploit tests that could write host files if the code under test
// regressed: run them in a child process with a private mount namespace in
// which the runtime-side directories they aim at (/etc, /usr/lib, and /lib
// when it is not a symlink) are overlays over the real ones, with a tmpfs
// upper layer. Whatever is written there lands in the upper layer, never in
// the real directory, and shows up there (a new file, a copied-up one, a
// whiteout). The namespace and every mount in it go with the child.
//
// Also: a snapshot of a directory tree (type, mode, size, content hash,
// link target of each entry) to compare before and after.
//
// Thread safety: none; forks, so call from the test's only thread.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace gpulet::testing {

// The directories InPrivateMounts overlays.
std::vector<std::string> OverlaidDirs();

struct PrivateMountsResult {
  bool ran = false;    // the namespace and overlays were set up
  std::string report;  // what `body` returned, or why it did not run
};

// Runs `body` in a child process in a private mount namespace with
// OverlaidDirs() overlaid; `scratch` (an existing directory) holds the
// tmpfs with the upper layers, at <scratch>/overlay/<n>/upper. Returns what
// `body` returned.
PrivateMountsResult InPrivateMounts(
    const std::string& scratch,
    const std::function<std::string(const std::vector<std::string>& uppers)>&
        body);

// path relative to `root` -> "<type> <mode> <size> <hash or link target>",
// for every entry below `root` (symlinks not followed); empty when `root`
// does not exist.
using TreeSnapshot = std::map<std::string, std::string>;
TreeSnapshot Snapshot(const std::string& root);

// One line per entry added, removed or changed between the snapshots,
// prefixed with `where`; empty when they are equal.
std::string Differences(const std::string& where, const TreeSnapshot& before,
                        const TreeSnapshot& after);

}  // namespace gpulet::testing
