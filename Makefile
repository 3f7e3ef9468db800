# Front door to the CMake build. `make run`, `make test` and `make package`
# install their own dependencies first (scripts/deps.sh), so on a fresh
# Debian 12 machine they are the only commands needed.
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
JOBS       ?= $(shell nproc)
# CTest runs twice as many tests as there are cores: most of them wait on
# daemons, sockets and timers (the release stage at -j4 on 2 cores kept
# them 66 % busy and took 194 s instead of 334 s at -j2).
TEST_JOBS  ?= $(shell echo $$(( $$(nproc) * 2 )))
# The release tree builds the tests unless told not to: `make run`,
# `make install` and `make package` do not need them (nor cmocka, so
# `deps.sh run` is enough for them); `make test` always turns them back on.
SL_TESTS   ?= ON

.PHONY: all run test test-release test-asan fuzz bench install package deps clean

all:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DSL_TESTS=$(SL_TESTS)
	cmake --build $(BUILD) -j $(JOBS)

run:
	sh scripts/deps.sh run
	$(MAKE) all SL_TESTS=OFF
	@echo
	@echo "sluiced is starting on its built-in default, sluice.example.yaml (Ctrl-C stops it). In another terminal:"
	@echo "  redis-cli -p 6390 CL.THROTTLE user123 15 30 60     # redis-cell's command"
	@echo "  redis-cli -p 6390 SL.CHECK per_user alice           # a configured policy"
	@echo "  redis-cli -p 6390 SL.POLICIES                       # what is configured"
	@echo "  redis-cli -p 6390 INFO"
	@echo "  curl -i 'localhost:8090/v1/check?policy=search&key=k1'   # HTTP: 200, or 429 with Retry-After"
	@echo "  curl -s localhost:8090/metrics"
	@echo "(./$(BUILD)/sluice demo shows the library's algorithms on the articles' scenarios.)"
	@echo
	./$(BUILD)/sluiced

# Every stage runs even when an earlier one failed; one summary line each,
# then "N passed, N failed" (stages), and a non-zero exit if any failed.
test:
	sh scripts/deps.sh test
	MAKE="$(MAKE)" sh scripts/test-stages.sh release asan fuzz

test-release:
	$(MAKE) all SL_TESTS=ON
	ctest --test-dir $(BUILD) --output-on-failure -j $(TEST_JOBS)

test-asan:
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DSL_SANITIZE=ON
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(TEST_JOBS)

# Every parser's libFuzzer target, briefly, under ASan + UBSan (clang);
# each fuzzer is one thread, so they run $(JOBS) at a time.
fuzz:
	CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=Debug -DSL_FUZZ=ON
	cmake --build $(FUZZ_BUILD) -j $(JOBS)
	ctest --test-dir $(FUZZ_BUILD) --output-on-failure -L fuzz -j $(JOBS)

bench:
	sh scripts/deps.sh bench
	$(MAKE) all SL_TESTS=OFF
	./$(BUILD)/sluice-bench
	bench/resp_vs_redis.sh
	bench/http_vs_nginx.sh
	bench/redis_store_vs_lua.sh
	bench/gateway_vs_nginx.sh
	bench/grpc_vs_http.sh
	bench/waiters.py

# Installing to a system prefix as root also runs ldconfig (CMakeLists.txt),
# so the programs find libsluice.so.0 straight away.
install:
	$(MAKE) all SL_TESTS=OFF
	cmake --install $(BUILD)

# A Debian package (CPack) of the release tree: build/sluice_<version>_<arch>.deb
package:
	sh scripts/deps.sh package
	$(MAKE) all SL_TESTS=OFF
	cd $(BUILD) && cpack -G DEB

deps:
	sh scripts/deps.sh test

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
