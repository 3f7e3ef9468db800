# Front door to the CMake build. `make run` and `make test` install their
# own Debian dependencies first (scripts/deps.sh), so on a fresh Debian 12
# machine they are the only commands needed.
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
JOBS       ?= $(shell nproc)

.PHONY: all run test test-release test-asan fuzz bench install deps clean

all:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD) -j $(JOBS)

run:
	scripts/deps.sh run
	$(MAKE) all
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

test:
	scripts/deps.sh test
	$(MAKE) test-release test-asan fuzz

test-release: all
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

test-asan:
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DSL_SANITIZE=ON
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS)

# Every parser's libFuzzer target, briefly, under ASan + UBSan (clang).
fuzz:
	CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=Debug -DSL_FUZZ=ON
	cmake --build $(FUZZ_BUILD) -j $(JOBS)
	ctest --test-dir $(FUZZ_BUILD) --output-on-failure -L fuzz

bench: all
	./$(BUILD)/sluice-bench
	scripts/deps.sh bench
	bench/resp_vs_redis.sh
	bench/http_vs_nginx.sh
	bench/redis_store_vs_lua.sh

install: all
	cmake --install $(BUILD)

deps:
	scripts/deps.sh test

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
