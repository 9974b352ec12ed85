// A module for test/strict's check of scripts/go-test: one test that
// passes, and one that skips when GOSKIP_FIXTURE_SKIP=1 (a subtest, so the
// indented "--- SKIP:" of a subtest is caught too).
package goskip

import (
	"os"
	"testing"
)

func TestRuns(t *testing.T) {}

func TestMaySkip(t *testing.T) {
	t.Run("inner", func(t *testing.T) {
		if os.Getenv("GOSKIP_FIXTURE_SKIP") == "1" {
			t.Skip("asked to skip")
		}
	})
}
