# InfraLens build entry points. `make run` and `make test` work as root on a fresh Debian 12 machine:
# they install any missing Debian package, configure with CMake and build. The browser tests also
# need Debian's chromium and, from npm, playwright-core (npm ci from package-lock.json).
SHELL := /bin/bash
JOBS ?= $(shell nproc)
BUILD ?= build
DEBS := cmake ninja-build g++ make pkg-config libcli11-dev libfmt-dev nlohmann-json3-dev libgtest-dev libgmock-dev \
        libbenchmark-dev libsimdjson-dev libtomlplusplus-dev zlib1g-dev libre2-dev libisal-dev \
        clang libclang-rt-14-dev dpkg-dev file
# The Python module (python/, docs/python.md): pybind11 for Debian's python3.
DEBS += python3-dev python3-pybind11

# Only the tests need these: a browser for the page tests (driven by playwright-core from npm).
TEST_DEBS := chromium
# The Python module's tests: pandas for to_frame(), Dask's distributed, pytest.
TEST_DEBS += python3-pandas python3-distributed python3-pytest
# A compiler launcher such as ccache is the user's choice (LAUNCHER=-DCMAKE_CXX_COMPILER_LAUNCHER=ccache):
# not on by default, since a cache shared between checkouts has handed back stale objects here.
LAUNCHER ?=
# New build trees use the Ninja generator: under it the test files compile beside the engine
# (CMakeLists.txt, infralens_tests_objects), where the Makefiles generator builds target after
# target. A tree configured before keeps the generator it has (CMake refuses to switch one).
generator = $(if $(wildcard $(1)/CMakeCache.txt),,-G Ninja)
HOST ?= 127.0.0.1
PORT ?= 8080

.PHONY: all deps deps-test build run cli test test-unit test-sanitize test-asan test-fuzz bench load clean format format-check install deb

all: build

# Installs those of the Debian packages $(1) that dpkg does not list as installed (root only).
define install_debs
	@missing=$$(for p in $(1); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:" $$missing >&2; \
	  if [ "$$(id -u)" != 0 ]; then echo "error: need root to apt-get install:" $$missing >&2; exit 1; fi; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
endef

deps:
	$(call install_debs,$(DEBS))

# Debian's chromium, Node.js and npm when missing (the machine image ships Node.js with npm), then
# the npm packages pinned in package-lock.json. Nothing else is downloaded: playwright-core drives
# /usr/bin/chromium and never fetches a browser.
deps-test: deps node_modules/.package-lock.json
	$(call install_debs,$(TEST_DEBS))

node_modules/.package-lock.json: package.json package-lock.json
	@if ! command -v npm >/dev/null; then \
	  echo "installing Debian packages: nodejs npm" >&2; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -qq && apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null; \
	fi
	npm ci --no-audit --no-fund --loglevel=error

build: deps
	@cmake -S . -B $(BUILD) $(call generator,$(BUILD)) -DCMAKE_BUILD_TYPE=Release $(LAUNCHER) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

# The lab workbench in the browser: prints its address (http://127.0.0.1:8080/) and serves until
# Ctrl-C. `make run PORT=9000` picks another port. Scripts use the CLI (`make cli`, infralens --help).
run: build
	./$(BUILD)/infralens serve --host $(HOST) --port $(PORT)

# The former default job: every pipeline schedule side by side for 4 ranks and 8 microbatches.
cli: build
	./$(BUILD)/infralens compare --pp 4 -m 8

test-unit: build deps-test
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

# The second build: clang with AddressSanitizer + UndefinedBehaviorSanitizer at -O1, which also
# builds the libFuzzer targets. It runs the unit tests (one process per suite) and each fuzz target
# for 2 s over its seed corpus, two at a time; the slow end-to-end tests (browser, load, help
# examples, install) run in the Release build only, so only what its tests run is built there
# (the infralens_check target: no CLI, no serve_load).
SAN_BUILD ?= build-asan
test-sanitize: deps
	@CXX=clang++ cmake -S . -B $(SAN_BUILD) $(call generator,$(SAN_BUILD)) -DCMAKE_BUILD_TYPE=Debug -DINFRALENS_FUZZ=ON -DINFRALENS_BENCH=OFF $(LAUNCHER) \
	  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -gline-tables-only" >/dev/null
	@cmake --build $(SAN_BUILD) -j$(JOBS) --target infralens_check
	cd $(SAN_BUILD) && ctest --output-on-failure -j$(JOBS)

# The former names of the sanitizer and fuzz runs: both are the one build above now.
test-asan test-fuzz: test-sanitize

test: test-unit test-sanitize
	@echo "all test suites passed (Release: unit, golden, API, browser, load, examples; clang ASan+UBSan: unit, fuzz)"

# Install the binary, its man page, bash completion and docs: `make install PREFIX=/usr/local`
# (DESTDIR=/some/root honoured, as Debian packaging expects).
PREFIX ?= /usr/local
install: build
	DESTDIR=$(DESTDIR) cmake --install $(BUILD) --prefix $(PREFIX)

# A Debian package (CPack): build/infralens_<version>_<arch>.deb; `dpkg -i` it as root.
deb: build
	cd $(BUILD) && cpack -G DEB

bench: build
	./$(BUILD)/infralens_bench
	bench/cpu_figures.sh $(BUILD)/infralens
	bench/inflate_compare.sh

# The server under load on loopback: 5,000 mixed requests over 32 connections; prints p50/p99.
load: build
	./$(BUILD)/serve_load --requests 5000 --connections 32

format:
	clang-format -i $$(git ls-files '*.cc' '*.h')

# Whether every C++ file is as `make format` leaves it (clang-format from Debian's clang-format
# package, 14 on Debian 12): lists the files that are not, fails if any.
format-check:
	@bad=$$(for f in $$(git ls-files '*.cc' '*.h'); do clang-format "$$f" | cmp -s - "$$f" || echo "$$f"; done); \
	if [ -n "$$bad" ]; then echo "not clang-formatted (make format):" $$bad >&2; exit 1; fi

clean:
	rm -rf build build-asan build-fuzz node_modules
