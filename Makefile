# elec - build, test, benchmark, install.
#   make run        elecmap on its built-in input (the README's main command)
#   make test       every test; GPU tests skip, saying so, without a GPU
#   make test-gpu   the GPU tests alone (on a machine with a GPU)
#   make sanitize   the CPU tests under ASan and UBSan
#   make bench      benchmarks (GPU); record the output in bench/RESULTS.md
#   make install    headers and elecmap under PREFIX (default /usr/local)

CC      ?= cc
CXX     ?= c++
NVCC    ?= nvcc
PREFIX  ?= /usr/local
CUDA_ARCH ?= sm_90

WARN    = -Wall -Wextra -pedantic -Werror
CFLAGS  ?= -O2
# -fno-math-errno lets sqrt vectorise; OpenMP where the compiler has it.
OPENMP  := $(shell printf 'int main(void){return 0;}' | $(CC) -fopenmp -x c - -o /dev/null 2>/dev/null && echo -fopenmp)
# FFTW3 is the CPU FFT of SPME; without it the CPU SPME reports
# ELEC_ERR_UNSUPPORTED and its tests skip, saying so.
HAVE_FFTW := $(shell printf '\043include <fftw3.h>\nint main(void){return 0;}' | $(CC) -x c - -lfftw3 -o /dev/null 2>/dev/null && echo 1)
ifeq ($(HAVE_FFTW),1)
FFTW_FLAGS = -DELEC_WITH_FFTW
FFTW_LIBS = -lfftw3
endif
ALL_CFLAGS = -std=c99 $(WARN) $(CFLAGS) -fno-math-errno $(OPENMP) $(FFTW_FLAGS) -I.
NVCCFLAGS ?= -O3
ALL_NVCCFLAGS = -std=c++17 -arch=$(CUDA_ARCH) $(NVCCFLAGS) $(FFTW_FLAGS) -I. -Xcompiler "-Wall -Wextra -Wno-missing-field-initializers $(OPENMP)" -Werror all-warnings
CUDA_LIBS = -lcufft $(FFTW_LIBS)
HAVE_NVCC := $(shell command -v $(NVCC) 2>/dev/null)

HEADERS = elec.h elec_cpu.h elec_cuda.cuh
BUILD   = build

CPU_TESTS = $(BUILD)/test_core $(BUILD)/test_io $(BUILD)/test_cpu $(BUILD)/test_ewald $(BUILD)/test_spme $(BUILD)/test_tolerance $(BUILD)/test_msm $(BUILD)/test_cutoff $(BUILD)/test_header_only
GPU_TESTS = $(BUILD)/test_gpu $(BUILD)/test_gpu_spme $(BUILD)/test_gpu_cutoff $(BUILD)/test_gpu_msm

ifeq ($(HAVE_NVCC),)
ELECMAP_SRC = examples/elecmap.c
TEST_BINS = $(CPU_TESTS)
else
ELECMAP_SRC = examples/elecmap.cu
TEST_BINS = $(CPU_TESTS) $(GPU_TESTS)
endif

# test_cli wraps tests/test_cli.sh, which runs the built tools
.PHONY: all run test test-gpu sanitize bench bench-peer install clean tour md msm-table spme-table

all: $(BUILD)/elecmap $(BUILD)/elecenergy $(TEST_BINS)

$(BUILD):
	mkdir -p $(BUILD)

# elecmap is one source; under nvcc it gains the GPU path.
$(BUILD)/elecmap: examples/elecmap.c $(HEADERS) | $(BUILD)
ifeq ($(HAVE_NVCC),)
	$(CC) $(ALL_CFLAGS) -o $@ examples/elecmap.c $(FFTW_LIBS) -lm
else
	$(NVCC) $(ALL_NVCCFLAGS) -x cu -DELEC_WITH_CUDA -o $@ examples/elecmap.c $(CUDA_LIBS)
endif

$(BUILD)/elecenergy: examples/elecenergy.c $(HEADERS) | $(BUILD)
ifeq ($(HAVE_NVCC),)
	$(CC) $(ALL_CFLAGS) -o $@ examples/elecenergy.c $(FFTW_LIBS) -lm
else
	$(NVCC) $(ALL_NVCCFLAGS) -x cu -DELEC_WITH_CUDA -o $@ examples/elecenergy.c $(CUDA_LIBS)
endif

run: $(BUILD)/elecmap
	$(BUILD)/elecmap --demo $(BUILD)/demo.dx

$(BUILD)/test_%: tests/test_%.c tests/test.h tests/systems.h tests/fftw.h $(HEADERS) | $(BUILD)
	$(CC) $(ALL_CFLAGS) -o $@ tests/test_$*.c $(FFTW_LIBS) -lm

$(BUILD)/test_header_only: tests/header_only_a.c tests/header_only_b.c $(HEADERS) | $(BUILD)
	$(CC) $(ALL_CFLAGS) -o $@ tests/header_only_a.c tests/header_only_b.c $(FFTW_LIBS) -lm
	$(CXX) -x c++ -std=c++11 $(WARN) -Wno-missing-field-initializers -I. -fsyntax-only tests/header_only_a.c
	$(CC) -std=c99 $(WARN) -I. $(FFTW_FLAGS) -DELEC_STATIC -o $(BUILD)/test_header_only_static tests/header_only_a.c tests/header_only_b.c $(FFTW_LIBS) -lm

$(BUILD)/test_gpu: tests/test_gpu.cu tests/test.h tests/systems.h tests/gpu.h $(HEADERS) | $(BUILD)
	$(NVCC) $(ALL_NVCCFLAGS) -o $@ tests/test_gpu.cu $(CUDA_LIBS)

$(BUILD)/test_gpu_spme: tests/test_gpu_spme.cu tests/test.h tests/systems.h tests/gpu.h $(HEADERS) | $(BUILD)
	$(NVCC) $(ALL_NVCCFLAGS) -o $@ tests/test_gpu_spme.cu $(CUDA_LIBS)

$(BUILD)/test_gpu_cutoff: tests/test_gpu_cutoff.cu tests/test.h tests/systems.h tests/gpu.h $(HEADERS) | $(BUILD)
	$(NVCC) $(ALL_NVCCFLAGS) -o $@ tests/test_gpu_cutoff.cu $(CUDA_LIBS)
$(BUILD)/test_gpu_msm: tests/test_gpu_msm.cu tests/test.h tests/systems.h tests/gpu.h $(HEADERS) | $(BUILD)
	$(NVCC) $(ALL_NVCCFLAGS) -o $@ tests/test_gpu_msm.cu $(CUDA_LIBS)

$(BUILD)/test_cli: tests/test_cli.sh $(BUILD)/elecmap $(BUILD)/elecenergy | $(BUILD)
	printf '#!/bin/sh\nexec sh tests/test_cli.sh $(BUILD)\n' > $@
	chmod +x $@

test: $(TEST_BINS) $(BUILD)/test_cli
	@sh tests/run.sh $(TEST_BINS) $(BUILD)/test_cli

test-gpu: $(GPU_TESTS)
	@ELEC_REQUIRE_GPU=1 sh tests/run.sh $(GPU_TESTS)

# The CPU tests under AddressSanitizer and UndefinedBehaviorSanitizer
# (serial: the sanitizers do not see through OpenMP's runtime), in their
# own build folder; any report fails the test it comes from.
SANITIZE_BUILD = $(BUILD)/sanitize
SANITIZE_TESTS = $(patsubst $(BUILD)/%,$(SANITIZE_BUILD)/%,$(CPU_TESTS))
$(SANITIZE_BUILD):
	mkdir -p $(SANITIZE_BUILD)
$(SANITIZE_BUILD)/test_%: tests/test_%.c tests/test.h tests/systems.h tests/fftw.h $(HEADERS) | $(SANITIZE_BUILD)
	$(CC) -std=c99 $(WARN) -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all $(FFTW_FLAGS) -I. -o $@ tests/test_$*.c $(FFTW_LIBS) -lm
$(SANITIZE_BUILD)/test_header_only: tests/header_only_a.c tests/header_only_b.c $(HEADERS) | $(SANITIZE_BUILD)
	$(CC) -std=c99 $(WARN) -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all $(FFTW_FLAGS) -I. -o $@ tests/header_only_a.c tests/header_only_b.c $(FFTW_LIBS) -lm
sanitize: $(SANITIZE_TESTS)
	@sh tests/run.sh $(SANITIZE_TESTS)

$(BUILD)/bench: bench/bench.cu tests/systems.h tests/gpu.h $(HEADERS) | $(BUILD)
	$(NVCC) $(ALL_NVCCFLAGS) -o $@ bench/bench.cu $(CUDA_LIBS)

$(BUILD)/dcs_tour: examples/dcs_tour.cu tests/systems.h $(HEADERS) | $(BUILD)
	$(NVCC) $(ALL_NVCCFLAGS) -o $@ examples/dcs_tour.cu $(CUDA_LIBS)

$(BUILD)/md_loop: examples/md_loop.cu $(HEADERS) | $(BUILD)
	$(NVCC) $(ALL_NVCCFLAGS) -o $@ examples/md_loop.cu $(CUDA_LIBS)

md: $(BUILD)/md_loop
	$(BUILD)/md_loop

$(BUILD)/msm_error_table: bench/msm_error_table.c tests/systems.h $(HEADERS) | $(BUILD)
	$(CC) $(ALL_CFLAGS) -O2 -o $@ bench/msm_error_table.c $(FFTW_LIBS) -lm

msm-table: $(BUILD)/msm_error_table
	$(BUILD)/msm_error_table

# SPME's a-priori mesh error (the table in elec.h), and its anisotropy check
$(BUILD)/spme_error_table: bench/spme_error_table.c elec.h | $(BUILD)
	$(CC) $(ALL_CFLAGS) -o $@ bench/spme_error_table.c -lm

spme-table: $(BUILD)/spme_error_table
	$(BUILD)/spme_error_table
	$(BUILD)/spme_error_table --check

$(BUILD)/bench_spme: bench/bench_spme.cu tests/systems.h tests/gpu.h $(HEADERS) | $(BUILD)
	$(NVCC) $(ALL_NVCCFLAGS) -o $@ bench/bench_spme.cu $(CUDA_LIBS)

bench: $(BUILD)/bench $(BUILD)/bench_spme
	$(BUILD)/bench
	$(BUILD)/bench_spme

# torch-pme side by side (needs its wheel: see bench/peer_torchpme.py)
bench-peer:
	python3 bench/peer_torchpme.py

tour: $(BUILD)/dcs_tour
	$(BUILD)/dcs_tour

install: $(BUILD)/elecmap $(BUILD)/elecenergy
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/bin
	install -m 644 $(HEADERS) $(DESTDIR)$(PREFIX)/include
	install -m 755 $(BUILD)/elecmap $(BUILD)/elecenergy $(DESTDIR)$(PREFIX)/bin

clean:
	rm -rf $(BUILD)
