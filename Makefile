# tfprof_lite developer commands. `make run` and `make test` work on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LINT_PATHS := $(wildcard tfprof_lite tests examples benchmarks scripts)
# Second venv for the Estimator tests: TensorFlow 2.15 (the last with tf.estimator,
# protobuf 4.25), whose wheels exist for Python 3.9-3.11 only.
PYTHON215 ?= $(PYTHON)
VENV215 := .venv-tf215
BIN215 := $(VENV215)/bin
STAMP215 := $(VENV215)/.installed
REQ215 := tests/tf215/requirements.txt
PY215_OK := $(shell $(PYTHON215) -c 'import sys; print(int((3, 9) <= sys.version_info[:2] <= (3, 11)))' 2>/dev/null)

.PHONY: run test test215 lint unit integration bench clean tools fuzz docs

$(STAMP): setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

$(STAMP215): $(REQ215) setup.cfg pyproject.toml
	$(PYTHON215) -m venv $(VENV215)
	$(BIN215)/pip install -q --upgrade pip
	$(BIN215)/pip install -q -r $(REQ215) -e .
	touch $(STAMP215)

# The quickstart draws an XLA graph with Graphviz's dot; without dot it writes the DOT
# text instead, so a failed install (no root, no apt-get; even with CI=true) is ignored.
run: $(STAMP)
	-@bash scripts/install-tools.sh dot
	$(BIN)/python examples/quickstart.py

lint: $(STAMP)
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/ruff format --check $(LINT_PATHS)
	$(BIN)/mypy tfprof_lite
	$(BIN)/lint-imports --no-cache
	$(BIN)/python scripts/gen_protos.py --check

unit: $(STAMP)
	$(BIN)/python -m pytest -q tests/unit

integration: $(STAMP)
	$(BIN)/python -m pytest -q tests/integration

tools:
	bash scripts/install-tools.sh

# Rewrite the shown output of every ```console example in README.md and docs/ from
# real runs (on the quickstart's tfprof_out/), then check the pages (docs/README.md).
docs: $(STAMP)
	TFPROF_LITE_REGEN_DOCS=1 $(BIN)/python -m pytest -q tests/integration/test_docs_examples.py

# The suites that feed add_step and the XSpace reader's, run a second time on the
# pure-Python decoders
# (TFPROF_LITE_PURE_PYTHON=1); the first run uses the native one, built in place
# first (optional: without a compiler it warns, and under CI=true
# tests/unit/test_native_decoder.py fails). See docs/native.md.
PURE_PATH_TESTS := $(addprefix tests/integration/,test_differential.py \
	test_handmade_diff.py test_live_path.py test_profile_roundtrip.py) \
	$(addprefix tests/unit/,test_advisor.py test_analysis_unit.py \
	test_api_message_types.py test_extreme_values.py test_invariants.py \
	test_memory_kernels.py test_regex_re2.py test_registries.py test_steps_trace.py \
	test_table_edge.py test_xla_ops.py test_xla_ops_align.py test_xla_timing.py test_xplane_reader.py \
	test_xspace_model.py test_xspace_load.py test_xspace_memcode.py \
	test_program_cost.py test_program_buffers.py test_xla_programs.py \
	test_formats_resolve.py test_event_window.py test_step_batch.py test_step_join.py \
	test_xspace_load_fast.py test_step_spans.py test_window_ops_memory.py test_lanes.py \
	test_step_records.py test_xspace_memory_records.py test_xspace_load_memory.py \
	cli/test_analysis_commands.py cli/test_report.py cli/test_usability.py)

test: lint $(STAMP) tools
	$(BIN)/python setup.py -q build_ext --inplace
	$(BIN)/python -m pytest -q -n 2 tests
	TFPROF_LITE_PURE_PYTHON=1 $(BIN)/python -m pytest -q -n 2 $(PURE_PATH_TESTS)
	$(MAKE) --no-print-directory test215

ifeq ($(PY215_OK),1)
test215: $(STAMP215)
	$(BIN215)/python -m pytest -q tests/tf215
else
test215:
	@echo "test215: SKIPPED: tensorflow-cpu 2.15.1 needs Python 3.9-3.11;" \
		"set PYTHON215 to such an interpreter (PYTHON215=$(PYTHON215))"
	@if [ "$${CI:-}" = "true" ]; then echo "test215: required in CI" >&2; exit 1; fi
endif

# Every benchmark script, one after the other (several minutes; see benchmarks/README.md).
BENCH_SCRIPTS := bench_core bench_timeline bench_stream bench_capture bench_monitor bench_cli bench_scale \
	bench_construct bench_xspace bench_programs bench_steps

bench: $(STAMP)
	@set -e; for script in $(BENCH_SCRIPTS); do \
		echo "== benchmarks/$$script.py"; \
		$(BIN)/python benchmarks/$$script.py; \
	done

# Fuzz campaign (docs/fuzzing.md): FUZZ_N mutated inputs (default 10000), FUZZ_SEED,
# reproducers of every crash under FUZZ_OUT (default /tmp/fuzz_repro).
fuzz: $(STAMP)
	$(BIN)/python -m tests.fuzz.campaign
	FUZZ_CODEC_N=$${FUZZ_CODEC_N:-30000} $(BIN)/python -m pytest -q \
		tests/unit/test_profile_codec.py tests/unit/test_graph_decode.py \
		tests/unit/test_graph_decode_unread.py -k mutated

clean:
	rm -rf $(VENV) $(VENV215) tfprof_out build *.egg-info .pytest_cache .mypy_cache .ruff_cache
