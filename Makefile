# The roofline suite. `make info` shows what was found and what will be built;
# every optional part turns its feature off with one line, never the build.
.DEFAULT_GOAL := all
SHELL := /bin/bash

CUDA_HOME ?= /usr/local/cuda
CC ?= cc
CFLAGS ?= -O3 -march=native
ALL_CFLAGS := -std=c11 -D_GNU_SOURCE -Wall -Wextra $(CFLAGS) -MMD -MP
LDLIBS := -lm -pthread

BUILD := build
BIN := bin

# ---- optional parts ----------------------------------------------------------
comma := ,
MULTIARCH := $(shell gcc -print-multiarch 2>/dev/null)
find_header = $(firstword $(wildcard $(foreach d,$(2),$(d)/$(1))))
SYS_INC := /usr/include /usr/include/$(MULTIARCH) /usr/local/include

NVCC := $(firstword $(wildcard $(CUDA_HOME)/bin/nvcc))
CUDA_INC := $(CUDA_HOME)/include
CUDA_LIBDIR := $(firstword $(wildcard $(CUDA_HOME)/lib64 $(CUDA_HOME)/lib))
CUDNN_H := $(call find_header,cudnn_version.h,$(CUDA_INC) $(SYS_INC))
CUPTI_H := $(call find_header,cupti.h,$(CUDA_INC) $(CUDA_HOME)/extras/CUPTI/include)
NCCL_H := $(call find_header,nccl.h,$(CUDA_INC) $(SYS_INC))
DNNL_H := $(call find_header,oneapi/dnnl/dnnl.h,$(SYS_INC))
CRITERION_H := $(call find_header,criterion/criterion.h,$(SYS_INC))
MPICC := $(shell command -v mpicc 2>/dev/null)
GNUPLOT := $(shell command -v gnuplot 2>/dev/null)

# Turing to Hopper, plus PTX for what comes after; GPU_ARCH=native builds for the GPU present.
GPU_ARCH ?= 75 80 86 89 90
ifeq ($(GPU_ARCH),native)
  NVCC_ARCH := -arch=native
else
  NVCC_ARCH := $(foreach a,$(GPU_ARCH),-gencode arch=compute_$(a),code=sm_$(a)) \
               -gencode arch=compute_$(lastword $(GPU_ARCH)),code=compute_$(lastword $(GPU_ARCH))
endif
NVCCFLAGS ?= -O3
# recursive (=): GPU_DEFS is filled below, once the optional parts are known
ALL_NVCCFLAGS = -std=c++17 $(NVCC_ARCH) $(NVCCFLAGS) -Xcompiler -Wall,-Wextra -MMD -MP $(filter -D% -I%,$(GPU_DEFS)) -DHAVE_CUDA

# ---- sources -----------------------------------------------------------------
# The library holds models/, counters/, peaks/ and analysis/; the oneDNN backend
# (models/cpu) and the .cu files of those folders join it when their parts are found.
# Every .c under those folders (any depth) and under bench/<subfolder>/ is
# library code; bench/*.c at the top are the programs.
LIB_DIRS := models analysis counters peaks
LIB_SRCS := $(shell find $(LIB_DIRS) $(wildcard bench/*/) -name '*.c' -not -path 'models/cpu/*' 2>/dev/null | sort)
ifneq ($(DNNL_H),)
  LIB_SRCS += $(wildcard models/cpu/*.c)
  # oneDNN is built on OpenMP here; the backend's own loops share its threads
  ALL_CFLAGS += -DHAVE_DNNL -fopenmp
  LDLIBS += -ldnnl -fopenmp
endif
# the libraries of a program that runs the CUDA backend on the host emulator
# (tests/emu/host/): everything but CUDA's own
HOST_LDLIBS := $(LDLIBS)
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o)
ifneq ($(NVCC),)
  LIB_CU_SRCS := $(shell find models counters peaks -name '*.cu' 2>/dev/null | sort)
  LIB_OBJS += $(LIB_CU_SRCS:%.cu=$(BUILD)/cu/%.o)
  ALL_CFLAGS += -DHAVE_CUDA -I$(CUDA_INC)
  # cudart static: a binary still starts where no driver is installed
  LDLIBS += -L$(CUDA_LIBDIR) -Wl,-rpath,$(CUDA_LIBDIR) -lcublasLt -lcublas -lcudnn
  ifneq ($(CUPTI_H),)
    CUPTI_LIBDIR := $(firstword $(wildcard $(CUDA_LIBDIR)/libcupti.so $(CUDA_HOME)/extras/CUPTI/lib64/libcupti.so))
    GPU_DEFS += -DHAVE_CUPTI -I$(dir $(CUPTI_H))
    LDLIBS += $(if $(CUPTI_LIBDIR),-L$(dir $(CUPTI_LIBDIR)) -Wl$(comma)-rpath$(comma)$(dir $(CUPTI_LIBDIR))) \
              -lcupti -lnvperf_host -lnvperf_target
  endif
  ifneq ($(NCCL_H),)
    GPU_DEFS += -DHAVE_NCCL
    LDLIBS += -lnccl
  endif
  LDLIBS += -lcudart_static -ldl -lrt -lstdc++
endif
# MPI for data-parallel runs: the flags of Open MPI's own wrapper, so the
# library builds with the plain C compiler.
ifneq ($(MPICC),)
  GPU_DEFS += -DHAVE_MPI $(shell $(MPICC) --showme:compile 2>/dev/null)
  MPI_LDLIBS := $(shell $(MPICC) --showme:link 2>/dev/null)
  LDLIBS += $(MPI_LDLIBS)
endif
ALL_CFLAGS += $(GPU_DEFS)
LIB := $(BUILD)/libroofline.a

# Every bench/*.c but the shared option parser is a program's main().
CLI_OBJ := $(BUILD)/bench/cli.o
PROGRAMS := $(filter-out cli,$(basename $(notdir $(wildcard bench/*.c))))
BINS := $(PROGRAMS:%=$(BIN)/%)

TEST_SRCS := $(wildcard tests/*.c)
TEST_BIN := $(BUILD)/tests/unit

CU_SRCS := $(shell find models counters peaks tests -name '*.cu' 2>/dev/null)
CU_OBJS := $(CU_SRCS:%.cu=$(BUILD)/cu/%.o)
# Each tests/gpu/*.cu is a program; device_check runs first and decides whether to skip;
# every other one runs even after one fails (the failed ones are listed last).
GPU_TESTS := $(patsubst tests/gpu/%.cu,$(BUILD)/tests/gpu/%,$(wildcard tests/gpu/*.cu))
# Bugs planted on purpose, for check-gpu's sanitize stage (never run by test-gpu).
SANITIZE_PROBE := $(BUILD)/tests/sanitize/planted

# ---- targets -----------------------------------------------------------------
# Every target is secondary: make deletes no intermediate file (objects, the
# emulator's generated sources), so that a second make rebuilds nothing. Only
# a bare .SECONDARY does that: one naming targets anywhere in this file makes
# every other intermediate deletable again.
.SECONDARY:
.PHONY: all test test-gpu check-gpu cuda-compile deps info clean bench report compare FORCE

all: $(BINS)

$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $^

$(BIN)/%: $(BUILD)/bench/%.o $(CLI_OBJ) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $^ -o $@ $(LDLIBS)

$(TEST_BIN): $(TEST_SRCS:%.c=$(BUILD)/%.o) $(CLI_OBJ) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $^ -o $@ -lcriterion $(LDLIBS)

$(BUILD)/tests/%.o: ALL_CFLAGS += -DROOFLINE_BIN_DIR='"$(CURDIR)/$(BIN)"' \
                                   -DROOFLINE_SOURCE_DIR='"$(CURDIR)"'

# env.json records the commit the programs were built from; git is read
# without taking its index lock, and envinfo is rebuilt when either changes.
GIT_COMMIT := $(or $(shell git rev-parse --short HEAD 2>/dev/null),unknown)
GIT_DIRTY := $(if $(shell git --no-optional-locks status --porcelain --untracked-files=no 2>/dev/null),1,0)
$(BUILD)/bench/envinfo.o: ALL_CFLAGS += -DROOFLINE_GIT_COMMIT='"$(GIT_COMMIT)"' \
                                        -DROOFLINE_GIT_DIRTY=$(GIT_DIRTY)
$(BUILD)/bench/envinfo.o: $(BUILD)/git-commit.txt
# (scripts/check_gpu.sh's make -q passes over each $(BUILD)/*: FORCE file with -o)
$(BUILD)/git-commit.txt: FORCE
	@mkdir -p $(@D)
	@echo '$(GIT_COMMIT) $(GIT_DIRTY)' | cmp -s - $@ || echo '$(GIT_COMMIT) $(GIT_DIRTY)' > $@

# CUDA: `make test` compiles every .cu file so that GPU code is checked on
# every run, GPU or not.
$(BUILD)/cu/%.o: %.cu
	@mkdir -p $(@D)
	$(NVCC) $(ALL_NVCCFLAGS) $(OBJ_DEFS) -c $< -o $@

# The own depthwise kernels' source, whose checksum keys an algorithm cache's
# rows (models/cuda/algo_cache.h): a row chosen, and checked, against other
# own kernels is not reused. With the kernels, what plans them (the filter
# gradient's slices) and what chooses between them and cuDNN (the trial, its
# tolerance). Worked out at every make and kept in a file rewritten only when
# it changes, on which the objects that carry it depend. OBJ_DEFS:
# one object's own -D flags, in every recipe that compiles a .cu (here and the
# host emulator's below).
OWN_DEPTHWISE_SRCS := $(addprefix models/cuda/,cuda_depthwise.cu cuda_depthwise_kernels.cuh \
                        cuda_device.cuh fast_divide.h cuda_plan.h cuda_plan.c cuda_conv_choose.cu)
OWN_DEPTHWISE_DEF := -DOWN_DEPTHWISE_ID=$(firstword $(shell cat $(OWN_DEPTHWISE_SRCS) | cksum))u
$(BUILD)/own-depthwise-id.txt: FORCE
	@mkdir -p $(@D)
	@echo '$(OWN_DEPTHWISE_DEF)' | cmp -s - $@ || echo '$(OWN_DEPTHWISE_DEF)' > $@
$(BUILD)/cu/models/cuda/cuda_depthwise.o: OBJ_DEFS := $(OWN_DEPTHWISE_DEF)
$(BUILD)/cu/models/cuda/cuda_depthwise.o: $(BUILD)/own-depthwise-id.txt

cuda-compile: $(if $(NVCC),$(CU_OBJS))
	@$(if $(NVCC),echo "cuda: compiled $(words $(CU_OBJS)) .cu file(s) for sm $(GPU_ARCH)",echo "cuda: toolkit not found under CUDA_HOME=$(CUDA_HOME); .cu files not compiled")

test: $(BINS) cuda-compile
	@$(if $(CRITERION_H),,echo "test: Criterion not found; run 'make deps'" >&2; exit 1)
	@$(MAKE) --no-print-directory $(TEST_BIN)
	$(TEST_BIN) --jobs 2

# ---- robustness: fuzzing and sanitizers (issue 16) ----------------------------
# tests/fuzz/ holds one fuzz target per parser. Their bodies also build into
# fuzz_regress, a plain program that `make test` runs (tests/test_fuzz_regress.c)
# over every crash input ever found (tests/fuzz/regress/) and the seed corpus.
#   make fuzz              the libFuzzer targets (clang) in $(FUZZ_BUILD)/fuzz/
#   make fuzz FUZZ_S=60    and runs each for 60 s: executions, crashes, hangs
#   make test-asan         the unit tests and programs under ASan + UBSan, leaks on
#   make test-asan-emu     the emulated GPU paths (bin/train --backend cuda, the trace
#                          and DDP checks) under them too
.PHONY: fuzz fuzz-targets test-asan test-asan-emu
FUZZ_DIR := $(BUILD)/tests/fuzz
FUZZ_REGRESS := $(FUZZ_DIR)/fuzz_regress
FUZZ_NAMES := $(notdir $(wildcard tests/fuzz/corpus/*))
# bin/train's main() with exit() and train_run() diverted to the harness, and
# the option parser with exit() diverted (tests/fuzz/fuzz_train.c says why)
FUZZ_OBJS := $(FUZZ_DIR)/fuzz_targets.o $(FUZZ_DIR)/fuzz_scratch.o $(FUZZ_DIR)/fuzz_train.o \
             $(FUZZ_DIR)/train_main.o $(FUZZ_DIR)/cli_exit.o
$(FUZZ_DIR)/train_main.o: bench/train.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Dmain=fuzz_train_main -Dtrain_run=fuzz_train_run -Dexit=fuzz_exit -c $< -o $@
$(FUZZ_DIR)/cli_exit.o: bench/cli.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Dexit=fuzz_exit -c $< -o $@
$(FUZZ_REGRESS): $(FUZZ_DIR)/fuzz_regress.o $(FUZZ_OBJS) $(LIB)
	$(CC) $(ALL_CFLAGS) $^ -o $@ $(LDLIBS)
# the unit tests replay with it: built first, not linked in
$(TEST_BIN): | $(FUZZ_REGRESS)
$(BUILD)/tests/test_fuzz_regress.o: ALL_CFLAGS += -DROOFLINE_FUZZ_REGRESS='"$(CURDIR)/$(FUZZ_REGRESS)"'

# libFuzzer builds: clang, without CUDA, MPI and oneDNN (no parser needs them,
# and clang's OpenMP is not the libgomp oneDNN was built with).
FUZZ_CC ?= clang
FUZZ_BUILD ?= build-fuzz
FUZZ_S ?= 0
SAN_FLAGS := -O1 -g -fno-omit-frame-pointer -march=native -fsanitize=address,undefined \
             -fno-sanitize-recover=all
fuzz:
	@command -v $(FUZZ_CC) >/dev/null || { echo "fuzz: $(FUZZ_CC) not found: apt-get install clang libclang-rt-14-dev" >&2; exit 1; }
	@$(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) BIN=$(FUZZ_BUILD)/bin CC=$(FUZZ_CC) \
	    CFLAGS='$(SAN_FLAGS) -fsanitize=fuzzer-no-link' CUDA_HOME=/nonexistent MPICC= DNNL_H= fuzz-targets
	@$(if $(filter-out 0,$(FUZZ_S)),tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_S) $(FUZZ_NAMES),echo "fuzz: $(words $(FUZZ_NAMES)) targets in $(FUZZ_BUILD)/fuzz/; FUZZ_S=60 runs each for 60 s")
FUZZ_BINS := $(FUZZ_NAMES:%=$(BUILD)/fuzz/fuzz_%)
fuzz-targets: $(FUZZ_BINS) $(FUZZ_REGRESS)
# a static pattern: a plain fuzz_% would also match the fuzz_<target>.d files
# that -MMD leaves beside them, which make remakes as included makefiles
$(FUZZ_BINS): $(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_main.c $(FUZZ_OBJS) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -fsanitize=fuzzer -DFUZZ_FN=fuzz_$* $^ -o $@ $(LDLIBS)

# The unit tests under AddressSanitizer and UBSan, the programs they run
# included (build-asan/, bin-asan/): gcc, so that OpenMP is the libgomp oneDNN
# uses; no CUDA (nvcc's objects are not instrumented) and no MPI (Open MPI's
# own allocations). tests/fuzz/lsan.supp lists the suppressions, each with why.
ASAN_BUILD ?= build-asan
ASAN_BIN ?= bin-asan
ASAN_ENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1:detect_stack_use_after_return=1 \
            LSAN_OPTIONS=suppressions=$(CURDIR)/tests/fuzz/lsan.supp:print_suppressions=0 \
            UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# scaling_stage runs `make bench` with bin/train --ddp under mpirun, which a build
# without MPI cannot do (it skips itself only where mpirun is missing).
test-asan:
	@$(MAKE) --no-print-directory BUILD=$(ASAN_BUILD) BIN=$(ASAN_BIN) CC=gcc CFLAGS='$(SAN_FLAGS)' \
	    CUDA_HOME=/nonexistent MPICC= all $(ASAN_BUILD)/tests/unit
	$(ASAN_ENV) $(ASAN_BUILD)/tests/unit --jobs 2 --filter '!(scaling_stage)/*'

# bin/train --backend cuda and bin/allreduce --transport nccl on the host
# emulator, and make test-gpu's trace-pass and DDP checks there, built under
# ASan and UBSan (build-asan-emu/, bin-asan-emu/; EMU_SANITIZE keeps the
# sanitizers in the emulator's fast/ objects, which make test builds at -O2
# without them for speed): the CUDA backend's host code, the trace and metric
# passes' bookkeeping and the NCCL and MPI DDP paths, which test-asan cannot
# build (no CUDA, no MPI); nvcc for one architecture, whose code nothing here
# runs. About 16 minutes on 2 cores, build included; not in CI. The emulated
# whole-network check (cuda_train_check) is left out: under the sanitizers
# each barrier of every block is a fiber switch (it had not ended after 13
# minutes), and bin/train runs the same backend. Open MPI keeps allocations at exit:
# its components stay loaded (no dlclose) and the slow unwinder names their
# frames, which tests/fuzz/lsan.supp suppresses by library.
ASAN_EMU_BUILD ?= build-asan-emu
ASAN_EMU_ENV := OMPI_MCA_mca_base_component_disable_dlclose=1 \
    $(subst detect_leaks=1,detect_leaks=1:fast_unwind_on_malloc=0,$(ASAN_ENV))
test-asan-emu:
	@$(MAKE) --no-print-directory BUILD=$(ASAN_EMU_BUILD) BIN=bin-asan-emu CC=gcc GPU_ARCH=90 \
	    CFLAGS='$(SAN_FLAGS)' EMU_SANITIZE=1 all $(ASAN_EMU_BUILD)/tests/unit
	$(ASAN_EMU_ENV) $(ASAN_EMU_BUILD)/tests/unit --jobs 2 \
	    --filter '@(cuda_train_emu/*|cuda_emu/trace_pass_check*|cuda_emu/ddp_check_on_the_host)'
# ---- end of fuzzing and sanitizers -------------------------------------------

# ---- the own CUDA kernels on the host (tests/emu/) ------------------------------
# g++ and the CUDA headers, no nvcc and no GPU: tests/emu/cuda_emu.h runs each
# kernel header of models/cuda/ on fibers, under ASan and UBSan, against direct
# loops; `make test` runs the program (tests/test_cuda_emu.c). Built wherever
# the CUDA toolkit's headers are.
EMU_DIR := $(BUILD)/tests/emu
EMU_PROG := $(EMU_DIR)/kernel_emu
EMU_OBJS := $(patsubst tests/emu/%.cpp,$(EMU_DIR)/%.o,$(wildcard tests/emu/*.cpp))
EMU_CXXFLAGS := -std=c++17 -D_GNU_SOURCE -O1 -g -fno-omit-frame-pointer \
                -fsanitize=address,undefined -fno-sanitize-recover=all \
                -Wall -Wextra -Wno-unknown-pragmas -I$(CUDA_INC) -MMD -MP
$(EMU_DIR)/%.o: tests/emu/%.cpp
	@mkdir -p $(@D)
	$(CXX) $(EMU_CXXFLAGS) -c $< -o $@
$(EMU_PROG): $(EMU_OBJS) $(LIB)
	$(CXX) $(EMU_CXXFLAGS) $^ -o $@ $(LDLIBS)

# The whole CUDA backend on the host (tests/emu/host/): translate_cu turns each
# launch of models/cuda/*.cu and of the layer and training checks of make
# test-gpu into an emulator launch; fake_cuda.cpp, fake_cudnn.cpp and
# fake_cublaslt.cpp stand in for the CUDA runtime, cuDNN and cuBLASLt (direct
# loops; fake_cudnn_graph.cpp: cuDNN's graph API over the same loops); the
# checks then run as on a GPU.
EMU_HOST_DIR := $(EMU_DIR)/host
EMU_TRANSLATE := $(EMU_HOST_DIR)/translate_cu
EMU_HOST_CHECKS := cuda_layers_check cuda_train_check
EMU_HOST_GEN := $(patsubst %.cu,$(EMU_HOST_DIR)/gen/%.cpp,$(wildcard models/cuda/*.cu) \
                  $(EMU_HOST_CHECKS:%=tests/gpu/%.cu))
EMU_FAKE_OBJS := $(patsubst %,$(EMU_HOST_DIR)/fake_%.o,cuda footprint cudnn cudnn_graph cublaslt)
EMU_HOST_BACKEND := $(patsubst $(EMU_HOST_DIR)/gen/%.cpp,$(EMU_HOST_DIR)/gen/%.o,$(filter \
                      $(EMU_HOST_DIR)/gen/models/%,$(EMU_HOST_GEN)))
EMU_HOST_PROGS := $(EMU_HOST_CHECKS:%=$(EMU_HOST_DIR)/%)
EMU_HOST_CXXFLAGS := $(EMU_CXXFLAGS) -DHAVE_CUDA $(filter -DHAVE_DNNL,$(ALL_CFLAGS)) \
                     -Wno-deprecated-declarations \
                     -Itests/emu/host -Imodels/cuda -Itests/gpu
$(EMU_TRANSLATE): tests/emu/host/translate_cu.cpp
	@mkdir -p $(@D)
	$(CXX) -std=c++17 -O1 -Wall -Wextra $< -o $@
$(EMU_HOST_DIR)/gen/%.cpp: %.cu $(EMU_TRANSLATE)
	@mkdir -p $(@D)
	$(EMU_TRANSLATE) $< $@
$(EMU_HOST_DIR)/gen/%.o: $(EMU_HOST_DIR)/gen/%.cpp
	$(CXX) $(EMU_HOST_CXXFLAGS) $(OBJ_DEFS) -c $< -o $@
$(EMU_HOST_DIR)/%.o: tests/emu/host/%.cpp
	@mkdir -p $(@D)
	$(CXX) $(EMU_HOST_CXXFLAGS) -c $< -o $@
# the direct loops standing in for cuDNN and cuBLASLt take most of the
# emulated steps' time
$(EMU_FAKE_OBJS): EMU_HOST_CXXFLAGS += -O2
# The layer check under the sanitizers; the training check, whose whole steps
# take minutes there (each barrier of every block is a fiber switch), built
# again in fast/ at -O2 without them.
EMU_HOST_FAST := $(EMU_HOST_DIR)/fast
ifeq ($(EMU_SANITIZE),)
EMU_FAST_CXXFLAGS := $(filter-out -O1 -fsanitize=% -fno-sanitize-recover=%,$(EMU_HOST_CXXFLAGS)) -O2
else
EMU_FAST_CXXFLAGS := $(EMU_HOST_CXXFLAGS)
endif
$(EMU_HOST_DIR)/gen/models/cuda/cuda_depthwise.o $(EMU_HOST_FAST)/models/cuda/cuda_depthwise.o: \
    OBJ_DEFS := $(OWN_DEPTHWISE_DEF)
$(EMU_HOST_DIR)/gen/models/cuda/cuda_depthwise.o $(EMU_HOST_FAST)/models/cuda/cuda_depthwise.o: \
    $(BUILD)/own-depthwise-id.txt
$(EMU_HOST_FAST)/%.o: $(EMU_HOST_DIR)/gen/%.cpp
	@mkdir -p $(@D)
	$(CXX) $(EMU_FAST_CXXFLAGS) $(OBJ_DEFS) -c $< -o $@
$(EMU_HOST_FAST)/%.o: tests/emu/host/%.cpp
	@mkdir -p $(@D)
	$(CXX) $(EMU_FAST_CXXFLAGS) -c $< -o $@
$(EMU_HOST_DIR)/cuda_layers_check: $(EMU_HOST_DIR)/gen/tests/gpu/cuda_layers_check.o \
        $(EMU_HOST_BACKEND) $(EMU_FAKE_OBJS) $(BUILD)/tests/layer_check.o $(BUILD)/tests/reference.o \
        $(LIB)
	$(CXX) $(EMU_HOST_CXXFLAGS) $^ -o $@ $(HOST_LDLIBS)
# the emulated backend and the stand-ins for the runtime, cuDNN and cuBLASLt, in fast/
EMU_FAST_BACKEND := $(patsubst $(EMU_HOST_DIR)/gen/%,$(EMU_HOST_FAST)/%,$(EMU_HOST_BACKEND)) \
                    $(patsubst $(EMU_HOST_DIR)/%,$(EMU_HOST_FAST)/%,$(EMU_FAKE_OBJS))
$(EMU_HOST_DIR)/cuda_train_check: $(EMU_HOST_FAST)/tests/gpu/cuda_train_check.o \
        $(EMU_FAST_BACKEND) $(LIB)
	$(CXX) $(EMU_FAST_CXXFLAGS) $^ -o $@ $(HOST_LDLIBS)
# the stand-in runtime's capture rules, checked on their own
EMU_FAKE_CUDA_CHECK := $(EMU_HOST_DIR)/fake_cuda_check
$(EMU_FAKE_CUDA_CHECK): $(EMU_HOST_DIR)/fake_cuda_check.o $(EMU_HOST_DIR)/fake_cuda.o \
        $(EMU_HOST_DIR)/fake_footprint.o
	$(CXX) $(EMU_HOST_CXXFLAGS) $^ -o $@ -pthread

# bin/train on the host emulator ($(EMU_HOST_DIR)/bin/train): the programs'
# C objects, the emulated backend of the training check, the translated .cu
# files of counters/ and models/ddp/, and stand-ins for CUPTI (fake_cupti.cpp:
# activity records of every emulated kernel; fake_cupti_profiler.cpp: the
# metric pass, refused as without counter permission unless
# FAKE_CUPTI_PROFILER_ERROR=0) and NCCL (fake_nccl.cpp: all-reduce over MPI, so that
# mpirun runs the NCCL transport with several ranks). make test runs it as a
# GPU machine would run bin/train (tests/test_cuda_train_emu.c).
EMU_TRAIN := $(EMU_HOST_DIR)/bin/train
EMU_TRAIN_READY := $(and $(NVCC),$(CUPTI_H),$(NCCL_H),$(MPICC))
EMU_TRAIN_GEN := $(patsubst %.cu,$(EMU_HOST_DIR)/gen/%.cpp,$(wildcard models/ddp/*.cu))
# counters/'s .cu files launch no kernel: g++ compiles them as they are
EMU_TRAIN_CUPTI := $(patsubst %.cu,$(EMU_HOST_FAST)/%.o,$(wildcard counters/*.cu))
EMU_TRAIN_OBJS := $(patsubst $(EMU_HOST_DIR)/gen/%.cpp,$(EMU_HOST_FAST)/%.o,$(EMU_TRAIN_GEN)) \
                  $(EMU_TRAIN_CUPTI) $(patsubst %,$(EMU_HOST_FAST)/fake_%.o,cupti cupti_profiler nccl)
# what the CUPTI and NCCL code and their stand-ins compile with (MPI's C API only)
EMU_CUPTI_NCCL_FLAGS := $(filter -D% -I%,$(GPU_DEFS)) -Icounters -Imodels/ddp -DOMPI_SKIP_MPICXX
$(EMU_TRAIN_OBJS): EMU_FAST_CXXFLAGS += $(EMU_CUPTI_NCCL_FLAGS)
$(EMU_TRAIN_CUPTI): $(EMU_HOST_FAST)/%.o: %.cu
	@mkdir -p $(@D)
	$(CXX) $(EMU_FAST_CXXFLAGS) -x c++ -c $< -o $@
$(EMU_TRAIN): $(BUILD)/bench/train.o $(CLI_OBJ) $(EMU_TRAIN_OBJS) $(EMU_FAST_BACKEND) $(LIB)
	@mkdir -p $(@D)
	$(CXX) $(EMU_FAST_CXXFLAGS) $^ -o $@ $(HOST_LDLIBS) $(MPI_LDLIBS)
# bin/allreduce --transport nccl the same way (its NCCL side is C in the
# library, linked here against the stand-ins instead of CUDA and NCCL)
EMU_ALLREDUCE := $(EMU_HOST_DIR)/bin/allreduce
$(EMU_ALLREDUCE): $(BUILD)/bench/allreduce.o $(CLI_OBJ) $(EMU_TRAIN_OBJS) $(EMU_FAST_BACKEND) $(LIB)
	@mkdir -p $(@D)
	$(CXX) $(EMU_FAST_CXXFLAGS) $^ -o $@ $(HOST_LDLIBS) $(MPI_LDLIBS)
# make test-gpu's checks of the trace pass and of the NCCL transport, over the
# same stand-ins
EMU_HOST_MORE := cupti_trace_check ddp_check
EMU_HOST_MORE_PROGS := $(EMU_HOST_MORE:%=$(EMU_HOST_DIR)/%)
$(EMU_HOST_MORE_PROGS): $(EMU_HOST_DIR)/%: $(EMU_HOST_FAST)/tests/gpu/%.o $(EMU_TRAIN_OBJS) \
        $(EMU_FAST_BACKEND) $(LIB)
	$(CXX) $(EMU_FAST_CXXFLAGS) $^ -o $@ $(HOST_LDLIBS) $(MPI_LDLIBS)
$(EMU_HOST_MORE:%=$(EMU_HOST_FAST)/tests/gpu/%.o): EMU_FAST_CXXFLAGS += $(EMU_CUPTI_NCCL_FLAGS)

ifneq ($(NVCC),)
$(TEST_BIN): | $(EMU_PROG) $(EMU_HOST_PROGS) $(EMU_FAKE_CUDA_CHECK)
$(BUILD)/tests/test_cuda_emu.o: ALL_CFLAGS += -DROOFLINE_CUDA_EMU='"$(CURDIR)/$(EMU_PROG)"' \
    -DROOFLINE_CUDA_HOST_DIR='"$(CURDIR)/$(EMU_HOST_DIR)"'
endif
ifneq ($(EMU_TRAIN_READY),)
$(TEST_BIN): | $(EMU_TRAIN) $(EMU_ALLREDUCE) $(EMU_HOST_MORE_PROGS)
$(BUILD)/tests/test_cuda_emu.o: ALL_CFLAGS += -DROOFLINE_CUDA_HOST_MORE
$(BUILD)/tests/test_cuda_train_emu.o: ALL_CFLAGS += -DROOFLINE_CUDA_TRAIN='"$(CURDIR)/$(EMU_TRAIN)"' \
    -DROOFLINE_CUDA_ALLREDUCE='"$(CURDIR)/$(EMU_ALLREDUCE)"'
endif

# The GPU tests share the direct-loop reference and the layer checks of the
# unit tests (plain C: no Criterion on a GPU node).
GPU_TEST_OBJS := $(BUILD)/tests/layer_check.o $(BUILD)/tests/reference.o
$(BUILD)/tests/gpu/%: $(BUILD)/cu/tests/gpu/%.o $(GPU_TEST_OBJS) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $^ -o $@ $(LDLIBS)

$(SANITIZE_PROBE): $(BUILD)/cu/tests/sanitize/planted.o
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $^ -o $@ $(LDLIBS)

test-gpu:
ifeq ($(NVCC),)
	@echo "skipped: no CUDA toolkit under CUDA_HOME=$(CUDA_HOME)"
else
	@$(MAKE) --no-print-directory $(GPU_TESTS)
	@out=$$($(BUILD)/tests/gpu/device_check); status=$$?; echo "$$out"; \
	 if grep -q '^skipped:' <<<"$$out"; then exit 0; fi; [ $$status -eq 0 ] || exit $$status; \
	 failed=; for t in $(filter-out %/device_check,$(GPU_TESTS)); do echo "== $$t"; \
	   $$t || failed="$$failed $${t##*/}"; done; \
	 [ -z "$$failed" ] || { echo "test-gpu: failed:$$failed"; exit 1; }
endif

# The one command that proves the GPU code on a GPU node (scripts/check_gpu.sh
# says what each stage does and how long it takes): STAGES=build,test,peaks,
# allreduce,train,torch,ddp,counters,sanitize or all (default build,test,train,torch: the
# node's validation), OUT=dir, DEADLINE=seconds,
# TAR=file.tgz; taken from the command line only (the device tool's machines
# export an OUT of their own).
check-gpu:
	@scripts/check_gpu.sh $(foreach v,OUT STAGES DEADLINE TAR,$(if $(filter command line,$(origin $(v))),$(v)='$($(v))'))

deps:
	@scripts/deps.sh

# `make bench ENV=x` (default local: the row of this machine); RUN=runs/x/ID resumes
# that run; MATRIX and RUNS_DIR point elsewhere (tests). ENV is taken from the
# command line only: some shells export an unrelated ENV (the sh startup file).
BENCH_ENV := $(if $(filter command line,$(origin ENV)),$(ENV),local)
# What is missing is installed first (scripts/deps.sh --bench; DEPS=off skips
# it); the build comes after, in a new make, so that it sees what was installed.
# An ENV that no row names is refused before either where bin/matrix is built
# already (a typo then costs no install and no build); bench.sh checks it again.
bench:
	@if [ -x '$(BIN)/matrix' ] && ! why=$$('$(BIN)/matrix' --file '$(or $(MATRIX),run_matrix.md)' \
	    --resolve '$(BENCH_ENV)' 2>&1 >/dev/null); then echo "$$why" >&2; exit 2; fi
	@$(if $(filter off,$(DEPS)),,scripts/deps.sh --bench)
	@$(MAKE) --no-print-directory all
	@scripts/bench.sh '$(BENCH_ENV)' RUN='$(RUN)' BIN='$(BIN)' MATRIX='$(MATRIX)' RUNS_DIR='$(RUNS_DIR)' REF='$(REF)'

# Re-renders a run folder from its CSVs: analysis, figures, report.
report: all
	@$(if $(RUN),,echo "report: give the run folder: make report RUN=runs/<ENV>/<RUN_ID>" >&2; exit 2)
	@test -x scripts/render.sh || { echo "report: scripts/render.sh is not there yet" >&2; exit 1; }
	BIN='$(BIN)' scripts/render.sh '$(RUN)'

# Environments side by side: make compare RUNS="runs/a/ID runs/b/ID" [COMPARE_OUT=dir]
COMPARE_OUT ?= runs/compare/$(shell date -u +%Y%m%dT%H%M%SZ)
# or make compare ENV=cpu: the finished runs of one environment (its run-to-run study)
compare: all
	@$(if $(or $(RUNS),$(filter command line,$(origin ENV))),,echo 'compare: give the run folders, make compare RUNS="runs/a/ID runs/b/ID", or an environment, make compare ENV=cpu' >&2; exit 2)
	@test -x scripts/compare.sh || { echo "compare: scripts/compare.sh is not there yet" >&2; exit 1; }
	BIN='$(BIN)' scripts/compare.sh '$(COMPARE_OUT)' $(if $(RUNS),$(RUNS),--env '$(ENV)' '$(or $(RUNS_DIR),runs)')

info:
	@CUDA_HOME='$(CUDA_HOME)' NVCC='$(NVCC)' CUDNN_H='$(CUDNN_H)' CUPTI_H='$(CUPTI_H)' \
	 NCCL_H='$(NCCL_H)' MPICC='$(MPICC)' DNNL_H='$(DNNL_H)' GNUPLOT='$(GNUPLOT)' \
	 CRITERION_H='$(CRITERION_H)' BINS='$(BINS)' GPU_ARCH_DESC='$(if $(filter native,$(GPU_ARCH)),the GPU present,sm $(GPU_ARCH) + PTX)' \
	 scripts/info.sh

clean:
	rm -rf $(BUILD) $(BIN)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
