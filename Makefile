# InfraLens build entry points. `make run` and `make test` work as root on a fresh Debian 12 machine:
# they install any missing Debian package, configure with CMake and build.
SHELL := /bin/bash
JOBS ?= $(shell nproc)
BUILD ?= build
DEBS := cmake g++ make pkg-config libcli11-dev libfmt-dev nlohmann-json3-dev libgtest-dev libgmock-dev \
        libbenchmark-dev libsimdjson-dev libtomlplusplus-dev libcpp-httplib-dev zlib1g-dev \
        clang libclang-rt-14-dev

.PHONY: all deps build run test test-unit test-asan test-fuzz bench clean format

all: build

deps:
	@missing=$$(for p in $(DEBS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:" $$missing >&2; \
	  if [ "$$(id -u)" != 0 ]; then echo "error: need root to apt-get install:" $$missing >&2; exit 1; fi; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

# The default job: every pipeline schedule side by side for 4 ranks and 8 microbatches.
run: build
	./$(BUILD)/infralens compare --pp 4 -m 8

test-unit: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

# Unit tests again under AddressSanitizer + UndefinedBehaviorSanitizer.
test-asan: deps
	@cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DINFRALENS_SANITIZE=ON -DINFRALENS_BENCH=OFF >/dev/null
	@cmake --build build-asan -j$(JOBS)
	cd build-asan && ctest --output-on-failure -j$(JOBS)

# libFuzzer targets (clang), each run briefly over its seed corpus.
test-fuzz: deps
	@CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DINFRALENS_FUZZ=ON >/dev/null
	@cmake --build build-fuzz -j$(JOBS)
	cd build-fuzz && ctest --output-on-failure

test: test-unit test-asan test-fuzz
	@echo "all test suites passed (unit, asan+ubsan, fuzz)"

bench: build
	./$(BUILD)/infralens_bench

format:
	clang-format -i $$(git ls-files '*.cc' '*.h')

clean:
	rm -rf build build-asan build-fuzz
