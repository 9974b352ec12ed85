// Putting computed labels where node-feature-discovery and the scheduler
// read them, as values: the text of NFD's local feature file, and the merge
// patch that brings a Node's labels to the computed set.
//
// Ownership on the Node: gpulet owns the labels it computes and lists
// their keys in the annotation kOwnedLabelsAnnotation. A patch sets every
// computed label, removes (null) the labels the annotation lists that are
// no longer computed, and rewrites the annotation; no other label is
// touched. Only keys under "nvidia.com/" are ever removed, whatever the
// annotation says, so an edited annotation cannot make gpulet delete
// another component's labels.
//
// Thread safety: pure functions.
#pragma once

#include <optional>
#include <string>

#include "nlohmann/json.hpp"
#include "src/model/labels/labels.h"

namespace gpulet::labels {

inline constexpr char kOwnedLabelsAnnotation[] = "gpulet.dev/node-labels";

// NFD's local feature file: one "key=value" line per label, by key.
std::string FeatureFileText(const Labels& labels);

// The merge patch ({"metadata": {"labels": ..., "annotations": ...}}) that
// makes `node` carry `labels` as gpulet's; nullopt when it already does.
std::optional<nlohmann::json> NodeLabelPatch(const nlohmann::json& node,
                                             const Labels& labels);

}  // namespace gpulet::labels
