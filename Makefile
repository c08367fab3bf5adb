# One-command set-up: `make demo` runs the main job on bundled logs, `make test` runs the tests.
# Both create .venv on first use. torch is pinned to the CPU build that lies on this kind of
# machine; any other version would pull gigabytes of CUDA wheels.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
TORCH_VERSION ?= 2.13.0
DEEPSPEED_VERSION ?= 0.19.8

$(VENV)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip setuptools wheel
	$(PY) -m pip install -q torch==$(TORCH_VERSION)
	DS_BUILD_OPS=0 $(PY) -m pip install -q --no-build-isolation deepspeed==$(DEEPSPEED_VERSION)
	$(PY) -m pip install -q -e '.[dev,study]'
	touch $@

.PHONY: venv demo test bench docs
venv: $(VENV)/.installed

demo: venv
	$(VENV)/bin/distdx diagnose examples/logs/deepspeed-zero3-oom.log
	$(VENV)/bin/distdx diagnose examples/logs/torchrun-nccl-timeout

test: venv
	$(PY) -m pytest -q -p no:cacheprovider

bench: venv
	$(PY) benchmarks/bench_diagnose.py

docs: venv  # every generated page: rules, doctor checks, lint rules, error codes (tests fail when one is stale)
	$(VENV)/bin/distdx rules docs --out docs/rules
	$(PY) -m distdx.doctor.docs > docs/doctor.md
	$(VENV)/bin/distdx lint --list-rules --format markdown > docs/lint.md
	$(PY) -c "from distdx.errors import errors_markdown; print(errors_markdown(), end='')" > docs/errors.md
