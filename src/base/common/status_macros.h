// Early-return helpers for absl::Status / absl::StatusOr, in the spirit of
// Google's RETURN_IF_ERROR / ASSIGN_OR_RETURN: the one copy for every layer
// (and the simulator, which uses them header-only).
//
// Thread safety: macros only.
#pragma once

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define GPULET_STATUS_CONCAT_INNER(a, b) a##b
#define GPULET_STATUS_CONCAT(a, b) GPULET_STATUS_CONCAT_INNER(a, b)

// Returns the status from the enclosing function when it is not OK.
#define GPULET_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::absl::Status gpulet_status_ = (expr);          \
    if (!gpulet_status_.ok()) return gpulet_status_; \
  } while (false)

// `lhs = value` of a StatusOr, or returns its status when not OK.
#define GPULET_ASSIGN_OR_RETURN(lhs, expr) \
  GPULET_ASSIGN_OR_RETURN_IMPL(            \
      GPULET_STATUS_CONCAT(gpulet_statusor_, __LINE__), lhs, expr)

#define GPULET_ASSIGN_OR_RETURN_IMPL(var, lhs, expr) \
  auto var = (expr);                                 \
  if (!var.ok()) return std::move(var).status();     \
  lhs = *std::move(var)
