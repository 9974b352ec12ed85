# gpulet: the two set-up commands are `make demo` and `make test`.
# Everything is built with CMake + Ninja; scripts/bootstrap installs what is
# missing from Debian packages first.

BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
SOAK_SECONDS ?= 1800
JOBS       ?= $(shell nproc)
LAUNCHER   := $(if $(shell command -v ccache),-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache,)
CMAKE_COMMON := -G Ninja $(LAUNCHER) -DGPULET_WERROR=ON
# ccache keys on paths relative to the checkout, so a fresh clone elsewhere
# (CI) reuses what an earlier build compiled.
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := true
# Three builds (normal, ASan, fuzz) share the cache; ccache's default 5 GB
# would evict one build's objects while compiling the next.
export CCACHE_MAXSIZE ?= 20G

.PHONY: all build test test-unit test-asan build-asan-only build-fuzz-only demo bench fuzz soak \
        bootstrap clean format

all: build

# BOOTSTRAP_FLAGS is empty (everything) except under `make demo`, which
# sets it for itself and its prerequisites below.
bootstrap:
	@scripts/bootstrap --check $(BOOTSTRAP_FLAGS) >/dev/null 2>&1 || scripts/bootstrap $(BOOTSTRAP_FLAGS)

$(BUILD)/build.ninja: | bootstrap
	cmake -S . -B $(BUILD) $(CMAKE_COMMON) -DCMAKE_BUILD_TYPE=RelWithDebInfo

# The two builds that only run tests link with lld (about half bfd's time
# on these 300 MB ASan programs); the shipped programs keep the default.
# The ASan build keeps line tables only (-g1: stack traces still name file
# and line) and builds only what its tests run. docs/testing.md, "How long
# CI takes", has the figures. Both are configured again when this file
# changes.
LLD := -DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld -DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=lld \
       -DCMAKE_MODULE_LINKER_FLAGS=-fuse-ld=lld

$(ASAN_BUILD)/build.ninja: Makefile | bootstrap
	cmake -S . -B $(ASAN_BUILD) $(CMAKE_COMMON) $(LLD) -DCMAKE_BUILD_TYPE=Debug \
	  -DCMAKE_C_FLAGS_DEBUG=-g1 -DCMAKE_CXX_FLAGS_DEBUG=-g1 \
	  -DGPULET_SANITIZE=ON -DGPULET_SANITIZED_TESTS_ONLY=ON -DGPULET_BUILD_BENCH=OFF

$(FUZZ_BUILD)/build.ninja: Makefile | bootstrap
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) $(CMAKE_COMMON) $(LLD) \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPULET_FUZZ=ON \
	  -DGPULET_BUILD_TESTS=OFF -DGPULET_BUILD_BENCH=OFF

build: $(BUILD)/build.ninja
	ninja -C $(BUILD) -j $(JOBS)

# Unit, integration and conformance tests, then the same tests under
# AddressSanitizer + UndefinedBehaviorSanitizer. Strict by default: with
# GPULET_FAIL_ON_SKIP=1 a skipped test (GTest, Go, a harness scenario) is a
# failure (docs/testing.md, "Skipped tests"); GPULET_FAIL_ON_SKIP=0 in the
# environment or on the command line lets skips pass on a machine that
# cannot run everything.
test: test-unit test-asan

test test-unit test-asan: export GPULET_FAIL_ON_SKIP ?= 1

test-unit: build
	cd $(BUILD) && $(CURDIR)/scripts/ctest-strict --output-on-failure -j $(JOBS)

test-asan: build-asan-only
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 $(CURDIR)/scripts/ctest-strict --output-on-failure -j $(JOBS) -LE no-sanitize

# The builds alone (.ci/run starts them while the previous tests run).
build-asan-only: $(ASAN_BUILD)/build.ninja
	ninja -C $(ASAN_BUILD) -j $(JOBS)

build-fuzz-only: $(FUZZ_BUILD)/build.ninja
	ninja -C $(FUZZ_BUILD) -j $(JOBS) fuzzers

# Every libFuzzer target, FUZZ_SECONDS each, FUZZ_JOBS (the number of
# cores) at a time.
fuzz: build-fuzz-only
	scripts/run-fuzzers $(FUZZ_BUILD) $(FUZZ_SECONDS)

# The chaos soak (docs/testing.md), SOAK_SECONDS long (30 minutes by
# default; `make test` runs a 3-minute one). SOAK_SEED=<n> replays a run.
# Then the API-outage soak on the real-cluster fixture (needs root): the
# long series, 1 s to 2 minutes of each outage, with memory shares and
# with DRA (`make test` runs one short outage of each kind).
soak: build
	$(BUILD)/bin/kubelet-harness soak --seconds $(SOAK_SECONDS) \
	  $(if $(SOAK_SEED),--seed $(SOAK_SEED)) \
	  --gpulet $(BUILD)/bin/gpulet --nvml-lib $(BUILD)/sim/lib/libnvidia-ml.so.1
	test/cluster/run $(BUILD)/bin/gpulet-cluster --build $(BUILD) --source $(CURDIR) \
	  --state /tmp/gpulet-cluster-outage-memory --machine mixed-memory \
	  --run '^api-outage-memory$$' --outage-long $(if $(SOAK_SEED),--seed $(SOAK_SEED))
	test/cluster/run $(BUILD)/bin/gpulet-cluster --build $(BUILD) --source $(CURDIR) \
	  --state /tmp/gpulet-cluster-outage-dra --machine islands-16 --dra \
	  --run '^api-outage-dra$$' --outage-long

# The demo builds only what scripts/demo runs: gpulet, the NVML simulator
# library and the kubelet harness (Go), not the tests; and bootstrap skips
# the Kubernetes binaries and the Go modules of the other test peers, which
# only `make test` needs (a later `make test` brings them in).
DEMO_TARGETS := gpulet gpulet_nvml_sim kubelet_harness
demo: BOOTSTRAP_FLAGS := --demo
demo: $(BUILD)/build.ninja
	@echo "demo: building $(DEMO_TARGETS) and what they need"
	ninja -C $(BUILD) -j $(JOBS) $(DEMO_TARGETS)
	scripts/demo $(BUILD)

# plugin_peers_bench's Go programs are built here only (not by `build`).
bench: build
	ninja -C $(BUILD) peers_bench_go
	scripts/run-benchmarks $(BUILD)

# Formats every C and C++ source as .clang-format says (scripts/check-format
# checks it without changing anything).
format:
	scripts/check-format --fix

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
