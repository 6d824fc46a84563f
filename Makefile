# elec - build, test, benchmark, install.
#   make run        elecmap on its built-in input (the README's main command)
#   make test       every test; GPU tests skip, saying so, without a GPU
#   make test-gpu   the GPU tests alone (on a machine with a GPU)
#   make sanitize   the CPU tests under ASan and UBSan
#   make compile-matrix  the headers under gcc and clang, C and C++, every
#                   common flag, with -Werror (a few minutes)
#   make sanitize-gpu  the GPU tests under compute-sanitizer's four tools
#   make fuzz       the parsers under libFuzzer (clang), FUZZ_SECONDS each
#   make bench      benchmarks (GPU); record the output in bench/RESULTS.md
#   make bench-peer OpenMM and torch-pme beside elec on the same GPU
#   make chargemap-tour  the charge-mapping ladder as a table (GPU)
#   make contents   rewrites the contents block of each header (make test
#                   fails while one is stale)
#   make install    headers, pkg-config and CMake files, elecmap, elecenergy
#                   and elecsurf under PREFIX (default /usr/local), DESTDIR
#   make install-headers  the same without the tools
#   make consume    the installed files used by a project three ways
#                   (copied headers, pkg-config, CMake): tests/consume.sh
# Switches: CUDA=0 builds for the CPU alone even where nvcc is present;
# HAVE_FFTW= builds without FFTW3 (the CPU SPME then reports
# ELEC_ERR_UNSUPPORTED and its tests skip); HAVE_ZLIB= without zlib (gzip
# is refused, saying so); CC=clang another compiler.

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
# libpng: elecsurf's .png pictures (the example, not the headers); without
# it elecsurf refuses .png output, saying why.
HAVE_PNG := $(shell printf '\043include <png.h>\nint main(void){return 0;}' | $(CC) -x c - -lpng -o /dev/null 2>/dev/null && echo 1)
ifeq ($(HAVE_PNG),1)
PNG_FLAGS = -DELECSURF_WITH_PNG
PNG_LIBS = -lpng
endif
# zlib: gzip-compressed maps and inputs (.dx.gz, .mrc.gz, .pqr.gz); without
# it (HAVE_ZLIB=) they are refused with ELEC_ERR_UNSUPPORTED, saying why.
HAVE_ZLIB := $(shell printf '\043include <zlib.h>\nint main(void){return 0;}' | $(CC) -x c - -lz -o /dev/null 2>/dev/null && echo 1)
ifeq ($(HAVE_ZLIB),1)
ZLIB_FLAGS = -DELEC_WITH_ZLIB
ZLIB_LIBS = -lz
endif
# MPI (Debian's Open MPI: openmpi-bin, libopenmpi-dev): elecmap_mpi and its
# test, tests/test_mpi.sh, which skips, saying so, without it.  MPICC is
# Open MPI's wrapper; OMPI_CC makes it wrap $(CC) (CC=clang builds with
# clang too).
MPICC ?= mpicc
HAVE_MPI := $(shell command -v mpirun > /dev/null 2>&1 && printf '\043include <mpi.h>\nint main(void){return 0;}' | OMPI_CC=$(CC) $(MPICC) -x c - -o /dev/null 2>/dev/null && echo 1)
# what the headers are built with, and link against
DEP_FLAGS = $(FFTW_FLAGS) $(ZLIB_FLAGS)
DEP_LIBS = $(FFTW_LIBS) $(ZLIB_LIBS)
ALL_CFLAGS = -std=c99 $(WARN) $(CFLAGS) -fno-math-errno $(OPENMP) $(DEP_FLAGS) -I.
NVCCFLAGS ?= -O3
# The host compiler gets -fno-math-errno as the C builds do: without it the
# CPU paths of nvcc-built tools run scalar (the C build's DCS demo is 3.6x
# slower without it).
ALL_NVCCFLAGS = -std=c++17 -arch=$(CUDA_ARCH) $(NVCCFLAGS) $(DEP_FLAGS) -I. -Xcompiler "-Wall -Wextra -Wno-missing-field-initializers -fno-math-errno $(OPENMP)" -Werror all-warnings
CUDA_LIBS = -lcufft $(DEP_LIBS)
# nvcc is used when it answers --version as CUDA's compiler: a missing or
# stand-in NVCC (NVCC=false, NVCC=none) builds for the CPU, as CUDA=0 does.
CUDA ?= 1
HAVE_NVCC := $(if $(filter 0 no off,$(CUDA)),,$(shell $(NVCC) --version 2>/dev/null | grep -qi cuda && echo 1))

HEADERS = elec.h elec_cpu.h elec_cuda.cuh
BUILD   = build

# The tests are named after what they test: the core, I/O, each method
# (CPU and its GPU twin), the accuracy knob, the header-only build.
CPU_TESTS = $(BUILD)/test_core $(BUILD)/test_io $(BUILD)/test_maps $(BUILD)/test_dcs $(BUILD)/test_mdh $(BUILD)/test_cutoff $(BUILD)/test_msm $(BUILD)/test_ewald $(BUILD)/test_spme $(BUILD)/test_tolerance $(BUILD)/test_chargemap $(BUILD)/test_alpb $(BUILD)/test_slab $(BUILD)/test_elecsurf_tree $(BUILD)/test_header_only $(BUILD)/test_fast_math $(BUILD)/test_alloc_fail
GPU_TESTS = $(BUILD)/test_gpu_dcs $(BUILD)/test_gpu_mdh $(BUILD)/test_gpu_cutoff $(BUILD)/test_gpu_msm $(BUILD)/test_gpu_spme $(BUILD)/test_gpu_chargemap $(BUILD)/test_gpu_alpb $(BUILD)/test_header_only_cuda $(BUILD)/test_gpu_spme_one_search_warp

ifeq ($(HAVE_NVCC),)
TEST_BINS = $(CPU_TESTS)
else
TEST_BINS = $(CPU_TESTS) $(GPU_TESTS)
endif

# test_cli wraps tests/test_cli.sh, which runs the built tools
.PRECIOUS: $(BUILD)/quickstart_%.c $(BUILD)/quickstart_elec_cuda.cu
.PHONY: all run test test-gpu contents sanitize valgrind sanitize-gpu fuzz bench bench-peer install install-headers consume clean tour chargemap-tour md msm-table spme-table compile-matrix elecmap_mpi_cuda FORCE

ifeq ($(HAVE_MPI),1)
MPI_TOOLS = $(BUILD)/elecmap_mpi
endif

all: $(BUILD)/elecmap $(BUILD)/elecenergy $(BUILD)/elecsurf $(MPI_TOOLS) $(TEST_BINS)

$(BUILD):
	mkdir -p $(BUILD)

# elecmap is one source; under nvcc it gains the GPU path.
$(BUILD)/elecmap: examples/elecmap.c examples/cli.h $(HEADERS) | $(BUILD)
ifeq ($(HAVE_NVCC),)
	$(CC) $(ALL_CFLAGS) -o $@ examples/elecmap.c $(DEP_LIBS) -lm
else
	$(NVCC) $(ALL_NVCCFLAGS) -x cu -DELEC_WITH_CUDA -o $@ examples/elecmap.c $(CUDA_LIBS)
endif

$(BUILD)/elecenergy: examples/elecenergy.c examples/cli.h $(HEADERS) | $(BUILD)
ifeq ($(HAVE_NVCC),)
	$(CC) $(ALL_CFLAGS) -o $@ examples/elecenergy.c $(DEP_LIBS) -lm
else
	$(NVCC) $(ALL_NVCCFLAGS) -x cu -DELEC_WITH_CUDA -o $@ examples/elecenergy.c $(CUDA_LIBS)
endif

# elecsurf likewise; PNG output where libpng is installed.
$(BUILD)/elecsurf: examples/elecsurf.c examples/cli.h $(HEADERS) | $(BUILD)
ifeq ($(HAVE_NVCC),)
	$(CC) $(ALL_CFLAGS) $(PNG_FLAGS) -o $@ examples/elecsurf.c $(DEP_LIBS) $(PNG_LIBS) -lm
else
	$(NVCC) $(ALL_NVCCFLAGS) $(PNG_FLAGS) -x cu -DELEC_WITH_CUDA -o $@ examples/elecsurf.c $(CUDA_LIBS) $(PNG_LIBS)
endif

# elecmap over MPI ranks (CPU; examples/elecmap_mpi.c includes elecmap.c)
$(BUILD)/elecmap_mpi: examples/elecmap_mpi.c examples/elecmap.c examples/cli.h $(HEADERS) | $(BUILD)
	OMPI_CC=$(CC) $(MPICC) $(ALL_CFLAGS) -o $@ examples/elecmap_mpi.c $(DEP_LIBS) -lm

# ... and with one GPU a rank (device rank mod the node's count), built by
# nvcc with Open MPI's include and link flags (C bindings alone: the
# C++ ones do not pass -Werror): make elecmap_mpi_cuda
$(BUILD)/elecmap_mpi_cuda: examples/elecmap_mpi.c examples/elecmap.c examples/cli.h $(HEADERS) | $(BUILD)
	$(NVCC) $(ALL_NVCCFLAGS) $(shell $(MPICC) --showme:compile) -DOMPI_SKIP_MPICXX -DMPICH_SKIP_MPICXX -x cu -DELEC_WITH_CUDA -o $@ examples/elecmap_mpi.c $(CUDA_LIBS) $(shell $(MPICC) --showme:link)
elecmap_mpi_cuda: $(BUILD)/elecmap_mpi_cuda

$(BUILD)/map_compare: tests/map_compare.c elec.h | $(BUILD)
	$(CC) $(ALL_CFLAGS) -o $@ tests/map_compare.c $(DEP_LIBS) -lm

run: $(BUILD)/elecmap
	$(BUILD)/elecmap --demo $(BUILD)/demo.dx

$(BUILD)/test_%: tests/test_%.c tests/test.h tests/systems.h tests/fftw.h tests/files.h tests/counted_malloc.h tests/failing_malloc.h $(HEADERS) | $(BUILD)
	$(CC) $(ALL_CFLAGS) -o $@ tests/test_$*.c $(DEP_LIBS) -lm

# the refusals of non-finite values where the compiler may fold x == x
$(BUILD)/test_fast_math: tests/test_fast_math.c tests/test.h $(HEADERS) | $(BUILD)
	$(CC) $(ALL_CFLAGS) -ffast-math -o $@ tests/test_fast_math.c $(DEP_LIBS) -lm

# elecsurf's nearest-vertex tree, tested through the tool's own source
$(BUILD)/test_elecsurf_tree $(BUILD)/sanitize/test_elecsurf_tree: examples/elecsurf.c examples/cli.h

$(BUILD)/test_header_only: tests/header_only_a.c tests/header_only_b.c $(HEADERS) | $(BUILD)
	$(CC) $(ALL_CFLAGS) -o $@ tests/header_only_a.c tests/header_only_b.c $(DEP_LIBS) -lm
	$(CXX) -x c++ -std=c++11 $(WARN) -Wno-missing-field-initializers -I. -fsyntax-only tests/header_only_a.c
	$(CC) -std=c99 $(WARN) -I. -DELEC_NO_POSIX -fsyntax-only tests/header_only_a.c
	$(CC) -std=c99 $(WARN) -I. $(DEP_FLAGS) -DELEC_STATIC -o $(BUILD)/test_header_only_static tests/header_only_a.c tests/header_only_b.c $(DEP_LIBS) -lm
	$(CC) -std=c99 $(WARN) -I. $(DEP_FLAGS) -DELEC_TEST_SPLIT -o $(BUILD)/test_header_only_split tests/header_only_a.c tests/header_only_b.c $(DEP_LIBS) -lm
	$(CC) -std=c99 $(WARN) -I. $(DEP_FLAGS) -DELEC_TEST_LATE -o $(BUILD)/test_header_only_late tests/header_only_a.c tests/header_only_b.c $(DEP_LIBS) -lm

# test_gpu_spme again with the neighbour list's search one warp a cluster
# (the form of large handles) at every size, so that both forms run
$(BUILD)/test_gpu_spme_one_search_warp: tests/test_gpu_spme.cu tests/test.h tests/systems.h tests/gpu.h $(HEADERS) | $(BUILD)
	$(NVCC) $(ALL_NVCCFLAGS) -DELEC__LIST_SEARCH_ITEMS=1 -o $@ $< $(CUDA_LIBS)

$(BUILD)/test_gpu_%: tests/test_gpu_%.cu tests/test.h tests/systems.h tests/gpu.h $(HEADERS) | $(BUILD)
	$(NVCC) $(ALL_NVCCFLAGS) -o $@ $< $(CUDA_LIBS)

# The header-only check with elec_cuda.cuh too, under nvcc: two translation
# units, one implementing the three headers, the other calling into it.
$(BUILD)/test_header_only_cuda: tests/header_only_a.c tests/header_only_b.c $(HEADERS) | $(BUILD)
	$(NVCC) $(ALL_NVCCFLAGS) -x cu -DELEC_TEST_CUDA -o $@ tests/header_only_a.c tests/header_only_b.c $(CUDA_LIBS)

# The quick start at the top of each header, compiled as a reader would
# paste it (tests/test_docs.sh reports them with the contents check).
QUICKSTART_HEAD = printf '\043include <stdio.h>\n\043include <stdlib.h>\n\043include "elec.h"\n\043include "elec_cpu.h"\n'
$(BUILD)/quickstart_%.c: %.h tools/contents.sh | $(BUILD)
	{ $(QUICKSTART_HEAD); printf 'int main(void) {\n'; sh tools/contents.sh --quickstart $<; printf 'return 0;\n}\n'; } > $@
$(BUILD)/quickstart_elec_cuda.cu: elec_cuda.cuh tools/contents.sh | $(BUILD)
	{ $(QUICKSTART_HEAD); printf '\043include "elec_cuda.cuh"\nint main(void) {\n'; sh tools/contents.sh --quickstart $<; printf 'return 0;\n}\n'; } > $@
$(BUILD)/quickstart_%.o: $(BUILD)/quickstart_%.c $(HEADERS)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<
$(BUILD)/quickstart_elec_cuda.o: $(BUILD)/quickstart_elec_cuda.cu $(HEADERS)
	$(NVCC) $(ALL_NVCCFLAGS) -c -o $@ $<
QUICKSTARTS = $(BUILD)/quickstart_elec.o $(BUILD)/quickstart_elec_cpu.o $(if $(HAVE_NVCC),$(BUILD)/quickstart_elec_cuda.o)
# The CPU tools the README runs by other targets (make msm-table, make
# spme-table) are built with the tests, so that one that no longer links
# (spme_error_table once left out zlib) fails make test, not a reader.
README_TOOLS = $(BUILD)/msm_error_table $(BUILD)/spme_error_table
$(BUILD)/test_docs: tests/test_docs.sh tools/contents.sh $(HEADERS) $(QUICKSTARTS) $(README_TOOLS) | $(BUILD)
	printf '#!/bin/sh\nexec sh tests/test_docs.sh $(BUILD) $(if $(HAVE_NVCC),cuda)\n' > $@
	chmod +x $@

$(BUILD)/test_cli: tests/test_cli.sh $(BUILD)/elecmap $(BUILD)/elecenergy $(BUILD)/elecsurf | $(BUILD)
	printf '#!/bin/sh\nexec sh tests/test_cli.sh $(BUILD)\n' > $@
	chmod +x $@

# test_mpi wraps tests/test_mpi.sh (elecmap_mpi against elecmap; skips
# without MPI)
$(BUILD)/test_mpi: tests/test_mpi.sh $(BUILD)/elecmap $(BUILD)/map_compare $(MPI_TOOLS) FORCE | $(BUILD)
	$(if $(MPI_TOOLS),,rm -f $(BUILD)/elecmap_mpi)
	printf '#!/bin/sh\nexec sh tests/test_mpi.sh $(BUILD)\n' > $@
	chmod +x $@

# tests/sanitize_gpu.sh's verdicts, against a stand-in for compute-sanitizer
$(BUILD)/test_sanitize_gpu: tests/test_sanitize_gpu.sh tests/sanitize_gpu.sh | $(BUILD)
	printf '#!/bin/sh\nexec sh tests/test_sanitize_gpu.sh\n' > $@
	chmod +x $@

test: $(TEST_BINS) $(BUILD)/test_cli $(BUILD)/test_mpi $(BUILD)/test_docs $(BUILD)/test_sanitize_gpu
	@sh tests/run.sh $(TEST_BINS) $(BUILD)/test_cli $(BUILD)/test_mpi $(BUILD)/test_docs $(BUILD)/test_sanitize_gpu

# Rewrites the contents block at the top of each header (tools/contents.sh)
contents:
	sh tools/contents.sh --write $(HEADERS)

test-gpu: $(GPU_TESTS)
	@ELEC_REQUIRE_GPU=1 sh tests/run.sh $(GPU_TESTS)

# The CPU tests under AddressSanitizer and UndefinedBehaviorSanitizer
# (serial: the sanitizers do not see through OpenMP's runtime), in their
# own build folder; any report fails the test it comes from.
SANITIZE_BUILD = $(BUILD)/sanitize
SANITIZE_TESTS = $(patsubst $(BUILD)/%,$(SANITIZE_BUILD)/%,$(CPU_TESTS))
$(SANITIZE_BUILD):
	mkdir -p $(SANITIZE_BUILD)
$(SANITIZE_BUILD)/test_%: tests/test_%.c tests/test.h tests/systems.h tests/fftw.h tests/files.h tests/counted_malloc.h tests/failing_malloc.h $(HEADERS) | $(SANITIZE_BUILD)
	$(CC) -std=c99 $(WARN) -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all $(DEP_FLAGS) -I. -o $@ tests/test_$*.c $(DEP_LIBS) -lm
$(SANITIZE_BUILD)/test_fast_math: tests/test_fast_math.c tests/test.h $(HEADERS) | $(SANITIZE_BUILD)
	$(CC) -std=c99 $(WARN) -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all -ffast-math $(DEP_FLAGS) -I. -o $@ tests/test_fast_math.c $(DEP_LIBS) -lm
$(SANITIZE_BUILD)/test_header_only: tests/header_only_a.c tests/header_only_b.c $(HEADERS) | $(SANITIZE_BUILD)
	$(CC) -std=c99 $(WARN) -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all $(DEP_FLAGS) -I. -o $@ tests/header_only_a.c tests/header_only_b.c $(DEP_LIBS) -lm
sanitize: $(SANITIZE_TESTS)
	@sh tests/run.sh $(SANITIZE_TESTS)

# The CPU tests under valgrind's memcheck (what ASan does not see: reads of
# memory never written), built -O1 -g without OpenMP (valgrind runs the
# threads one at a time) and with -DTEST_SMALL (the large random and water
# systems ten times smaller; the tolerances stand); any error, or a leak
# definitely or indirectly lost (each shown), fails the test it comes from.
# About an hour on two cores.
VALGRIND ?= valgrind
VALGRIND_BUILD = $(BUILD)/valgrind
VALGRIND_TESTS = $(patsubst $(BUILD)/%,$(VALGRIND_BUILD)/%,$(CPU_TESTS))
$(VALGRIND_BUILD):
	mkdir -p $(VALGRIND_BUILD)
$(VALGRIND_BUILD)/test_%: tests/test_%.c tests/test.h tests/systems.h tests/fftw.h tests/files.h tests/counted_malloc.h tests/failing_malloc.h $(HEADERS) | $(VALGRIND_BUILD)
	$(CC) -std=c99 $(WARN) -O1 -g -DTEST_SMALL $(DEP_FLAGS) -I. -o $@ tests/test_$*.c $(DEP_LIBS) -lm
$(VALGRIND_BUILD)/test_fast_math: tests/test_fast_math.c tests/test.h $(HEADERS) | $(VALGRIND_BUILD)
	$(CC) -std=c99 $(WARN) -O1 -g -DTEST_SMALL -ffast-math $(DEP_FLAGS) -I. -o $@ tests/test_fast_math.c $(DEP_LIBS) -lm
$(VALGRIND_BUILD)/test_header_only: tests/header_only_a.c tests/header_only_b.c $(HEADERS) | $(VALGRIND_BUILD)
	$(CC) -std=c99 $(WARN) -O1 -g $(DEP_FLAGS) -I. -o $@ tests/header_only_a.c tests/header_only_b.c $(DEP_LIBS) -lm
valgrind: $(VALGRIND_TESTS)
	@ELEC_TEST_WRAPPER="$(VALGRIND) -q --error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect" \
	    sh tests/run.sh $(VALGRIND_TESTS)

# The headers as users compile them: each compiler pair (gcc and clang) as
# C99, C11, C++11 and C++17, at -O0 and -O3, with and without
# -fno-math-errno and -fopenmp, -Wall -Wextra -pedantic -Werror, each a real
# compile (the optimiser's warnings need code generation); about 5 minutes
# on two cores, so not part of make test (.ci/run runs it).
MATRIX_COMPILERS ?= gcc:g++ clang:clang++
compile-matrix:
	@MATRIX_JOBS="$(MATRIX_JOBS)" sh tests/compile_matrix.sh $(MATRIX_COMPILERS)

# The GPU tests under compute-sanitizer: memcheck with --leak-check full,
# racecheck, synccheck and initcheck, each over every GPU test; any report,
# a failed test or a non-zero exit fails it (tests/sanitize_gpu.sh).  For
# a subset: SANITIZE_GPU_TOOLS="memcheck synccheck", SANITIZE_GPU_TESTS=
# "build/test_gpu_dcs", and ELEC_TEST_ONLY=points (tests whose name holds it).
# SANITIZE_GPU_JOBS=N runs each test on its own, N at once (on an H100 the
# runs add up to about 45 minutes; 16 at once took 6.4).
# cufft_baseline measures the device memory cuFFT keeps after its last
# plan, charged to cuFFT rather than to the test (tests/sanitize_gpu.sh).
COMPUTE_SANITIZER ?= $(or $(shell command -v compute-sanitizer 2>/dev/null),$(dir $(shell command -v $(NVCC) 2>/dev/null))compute-sanitizer)
SANITIZE_GPU_TOOLS ?= memcheck racecheck synccheck initcheck
SANITIZE_GPU_TESTS ?= $(GPU_TESTS)
SANITIZE_GPU_JOBS ?= 1
sanitize-gpu: $(SANITIZE_GPU_TESTS) $(BUILD)/cufft_baseline
	@COMPUTE_SANITIZER="$(COMPUTE_SANITIZER)" SANITIZE_GPU_TOOLS="$(SANITIZE_GPU_TOOLS)" \
	    SANITIZE_GPU_JOBS=$(SANITIZE_GPU_JOBS) SANITIZE_GPU_CUFFT_BASELINE=$(BUILD)/cufft_baseline \
	    SANITIZE_GPU_LOGS=$(BUILD)/sanitize-gpu sh tests/sanitize_gpu.sh $(SANITIZE_GPU_TESTS)

$(BUILD)/cufft_baseline: tests/cufft_baseline.cu | $(BUILD)
	$(NVCC) $(ALL_NVCCFLAGS) -o $@ $< $(CUDA_LIBS)

# The parsers under libFuzzer with ASan and UBSan (clang; on Debian the
# fuzzer runtime is in libclang-rt-14-dev): the PQR, DX, MRC and point-list readers
# and the command lines of elecmap and elecenergy, FUZZ_SECONDS each,
# seeded from ../shared/data/structures, maps elecmap writes and
# tests/fuzz/seeds (tests/fuzz/run.sh).
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
FUZZ_BUILD = $(BUILD)/fuzz
FUZZERS = $(FUZZ_BUILD)/fuzz_pqr $(FUZZ_BUILD)/fuzz_dx $(FUZZ_BUILD)/fuzz_mrc $(FUZZ_BUILD)/fuzz_elecmap_options $(FUZZ_BUILD)/fuzz_elecenergy_options $(FUZZ_BUILD)/fuzz_points $(FUZZ_BUILD)/fuzz_msms $(FUZZ_BUILD)/fuzz_elecsurf_options
$(FUZZ_BUILD):
	mkdir -p $(FUZZ_BUILD)
$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_args.h examples/elecmap.c examples/elecenergy.c examples/elecsurf.c examples/cli.h $(HEADERS) | $(FUZZ_BUILD)
	$(FUZZ_CC) -std=c99 $(WARN) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -I. -o $@ tests/fuzz/fuzz_$*.c -lm
fuzz: $(FUZZERS) $(BUILD)/elecmap
	@sh tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_BUILD) $(BUILD)/elecmap $(FUZZERS)

$(BUILD)/bench: bench/bench.cu tests/systems.h tests/gpu.h $(HEADERS) | $(BUILD)
	$(NVCC) $(ALL_NVCCFLAGS) -o $@ bench/bench.cu $(CUDA_LIBS)

$(BUILD)/dcs_tour: examples/dcs_tour.cu tests/systems.h $(HEADERS) | $(BUILD)
	$(NVCC) $(ALL_NVCCFLAGS) -o $@ examples/dcs_tour.cu $(CUDA_LIBS)

$(BUILD)/md_loop: examples/md_loop.cu tests/systems.h $(HEADERS) | $(BUILD)
	$(NVCC) $(ALL_NVCCFLAGS) -o $@ examples/md_loop.cu $(CUDA_LIBS)

# make md: molten NaCl on SPME (the default); MD_ARGS passes options, e.g.
# make md MD_ARGS="--system water --method msm --steps 4000" (examples/md_loop.cu)
md: $(BUILD)/md_loop
	$(BUILD)/md_loop $(MD_ARGS)

$(BUILD)/msm_error_table: bench/msm_error_table.c tests/systems.h $(HEADERS) | $(BUILD)
	$(CC) $(ALL_CFLAGS) -O2 -o $@ bench/msm_error_table.c $(DEP_LIBS) -lm

msm-table: $(BUILD)/msm_error_table
	$(BUILD)/msm_error_table

# SPME's a-priori mesh error (the table in elec.h), and its anisotropy check
$(BUILD)/spme_error_table: bench/spme_error_table.c elec.h | $(BUILD)
	$(CC) $(ALL_CFLAGS) -o $@ bench/spme_error_table.c $(DEP_LIBS) -lm

spme-table: $(BUILD)/spme_error_table
	$(BUILD)/spme_error_table
	$(BUILD)/spme_error_table --check

$(BUILD)/bench_spme: bench/bench_spme.cu tests/systems.h tests/gpu.h $(HEADERS) | $(BUILD)
	$(NVCC) $(ALL_NVCCFLAGS) -o $@ bench/bench_spme.cu $(CUDA_LIBS)

$(BUILD)/bench_alpb: bench/bench_alpb.cu tests/gpu.h $(HEADERS) | $(BUILD)
	$(NVCC) $(ALL_NVCCFLAGS) -o $@ bench/bench_alpb.cu $(CUDA_LIBS)

$(BUILD)/bench_chargemap: bench/bench_chargemap.cu tests/systems.h tests/gpu.h $(HEADERS) | $(BUILD)
	$(NVCC) $(ALL_NVCCFLAGS) -o $@ bench/bench_chargemap.cu $(CUDA_LIBS)

bench: $(BUILD)/bench $(BUILD)/bench_spme $(BUILD)/bench_alpb $(BUILD)/bench_chargemap
	$(BUILD)/bench
	$(BUILD)/bench_spme
	$(BUILD)/bench_alpb
	$(BUILD)/bench_chargemap

# Peers side by side on the same GPU: OpenMM (bench/peer_openmm.py, on the
# systems bench_spme --peer writes) and torch-pme (bench/peer_torchpme.py).
# Their wheels come from .whl/ where it is (installed with --no-deps into
# PEER_PY); without it, a peer that is not importable says so and is skipped.
PEER_PY ?= /tmp/pyd
bench-peer: $(BUILD)/bench_spme
	@if ls .whl/*.whl >/dev/null 2>&1; then \
	    python3 -m pip install -q --no-deps --no-index --target $(PEER_PY) .whl/*.whl; \
	else echo "bench-peer: no .whl/ here: the peers run only where already importable"; fi
	mkdir -p $(BUILD)/peer
	$(BUILD)/bench_spme --peer $(BUILD)/peer
	PYTHONPATH=$(PEER_PY):$$PYTHONPATH LD_LIBRARY_PATH=/usr/local/cuda/lib64:$$LD_LIBRARY_PATH \
	    python3 bench/peer_openmm.py $(BUILD)/peer
	PYTHONPATH=$(PEER_PY):$$PYTHONPATH python3 bench/peer_torchpme.py

tour: $(BUILD)/dcs_tour
	$(BUILD)/dcs_tour

$(BUILD)/chargemap_tour: examples/chargemap_tour.cu tests/systems.h tests/gpu.h $(HEADERS) | $(BUILD)
	$(NVCC) $(ALL_NVCCFLAGS) -o $@ examples/chargemap_tour.cu $(CUDA_LIBS)

chargemap-tour: $(BUILD)/chargemap_tour
	$(BUILD)/chargemap_tour

# The version, read from elec.h's three macros (written nowhere else).
version_part = $(shell sed -n 's/^[#]define ELEC_VERSION_$(1) \([0-9][0-9]*\).*/\1/p' elec.h)
VERSION_MAJOR := $(call version_part,MAJOR)
VERSION_MINOR := $(call version_part,MINOR)
VERSION_PATCH := $(call version_part,PATCH)
VERSION := $(VERSION_MAJOR).$(VERSION_MINOR).$(VERSION_PATCH)

# What the pkg-config and CMake files say of this build: FFTW3 and zlib
# where found (or switched off), OpenMP where the compiler has it; for
# nvcc the host compiler's flags through -Xcompiler.
PC_CFLAGS = $(strip $(DEP_FLAGS) $(OPENMP))
PC_LIBS = $(strip $(DEP_LIBS) -lm $(OPENMP))
PC_CUDA_CFLAGS = $(strip $(DEP_FLAGS) $(if $(OPENMP),-Xcompiler=$(OPENMP)))
PC_CUDA_LIBS = $(strip -lcufft $(DEP_LIBS) -lm $(if $(OPENMP),-Xcompiler=$(OPENMP)))
PACKAGING = $(BUILD)/elec.pc $(BUILD)/elec-cuda.pc $(BUILD)/elecConfig.cmake $(BUILD)/elecConfigVersion.cmake
# the settings they are made with: a change remakes them
PACKAGING_SETTINGS = $(PREFIX) $(VERSION) $(PC_CFLAGS) $(PC_LIBS) $(PC_CUDA_CFLAGS) $(PC_CUDA_LIBS)
$(BUILD)/packaging.settings: FORCE | $(BUILD)
	@echo '$(PACKAGING_SETTINGS)' | cmp -s - $@ || echo '$(PACKAGING_SETTINGS)' > $@
$(BUILD)/%: packaging/%.in $(BUILD)/packaging.settings elec.h | $(BUILD)
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' \
	    -e 's|@VERSION_MAJOR@|$(VERSION_MAJOR)|g' -e 's|@VERSION_MINOR@|$(VERSION_MINOR)|g' \
	    -e 's|@CFLAGS@|$(PC_CFLAGS)|g' -e 's|@LIBS@|$(PC_LIBS)|g' \
	    -e 's|@CUDA_CFLAGS@|$(PC_CUDA_CFLAGS)|g' -e 's|@CUDA_LIBS@|$(PC_CUDA_LIBS)|g' \
	    -e 's|@WITH_FFTW@|$(if $(FFTW_FLAGS),ON,OFF)|g' -e 's|@WITH_ZLIB@|$(if $(ZLIB_FLAGS),ON,OFF)|g' \
	    $< > $@
FORCE:

# PREFIX and DESTDIR go into the recipes' shell commands and sed, and
# PREFIX into elec.pc, whose flags pkg-config splits at spaces: a space or
# a character the shell or sed reads there made the install write into
# the source tree, run part of a path as a command, or fail halfway (an
# audit), so such a path is refused before anything is written.
ELEC__COMMA := ,
ELEC__PATH_HAZARDS = & | ; ' " \ ` \# ( ) < > * ? [ ] { } ~ ! $(ELEC__COMMA)
ifneq ($(filter install install-headers,$(MAKECMDGOALS)),)
ifneq ($(word 2,x$(DESTDIR)$(PREFIX)x)$(strip $(foreach c,$(ELEC__PATH_HAZARDS),$(findstring $(c),$(DESTDIR)$(PREFIX)))),)
$(error make install: PREFIX and DESTDIR make '$(DESTDIR)$(PREFIX)', which holds a space or one of $(ELEC__PATH_HAZARDS): the recipes, sed and pkg-config would split or misread it; give a path without them)
endif
endif

# The headers with elec.pc and elec-cuda.pc (pkg-config) under
# PREFIX/lib/pkgconfig and the CMake package (elecConfig.cmake,
# elecConfigVersion.cmake) under PREFIX/lib/cmake/elec; DESTDIR honoured.
install-headers: $(PACKAGING)
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig \
	    $(DESTDIR)$(PREFIX)/lib/cmake/elec
	install -m 644 $(HEADERS) $(DESTDIR)$(PREFIX)/include
	install -m 644 $(BUILD)/elec.pc $(BUILD)/elec-cuda.pc $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 $(BUILD)/elecConfig.cmake $(BUILD)/elecConfigVersion.cmake \
	    $(DESTDIR)$(PREFIX)/lib/cmake/elec

# ... and the tools under PREFIX/bin.
install: install-headers $(BUILD)/elecmap $(BUILD)/elecenergy $(BUILD)/elecsurf
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(BUILD)/elecmap $(BUILD)/elecenergy $(BUILD)/elecsurf $(DESTDIR)$(PREFIX)/bin

# The installed files as a user's build uses them: tests/consume.sh
# installs into a temporary prefix and builds the README's embedding
# example with copied headers, pkg-config and CMake (and a .cu file on
# elec::cuda and elec-cuda.pc where nvcc is, built but not run).
consume:
	@CC="$(CC)" NVCC="$(NVCC)" CUDA="$(CUDA)" CUDA_ARCH="$(CUDA_ARCH)" \
	    HAVE_FFTW="$(HAVE_FFTW)" HAVE_ZLIB="$(HAVE_ZLIB)" sh tests/consume.sh

clean:
	rm -rf $(BUILD)
