# Two entry points: `make demo` and `make test`. Both create .venv on first use.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo demo-live lab-demo test prometheus lint eval results bench clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/rcabot demo

demo-live: $(STAMP) prometheus
	$(BIN)/python scripts/demo_live.py

lab-demo: $(STAMP) prometheus
	$(BIN)/python scripts/lab_demo.py

prometheus:
	@bash scripts/ensure-prometheus.sh

test: $(STAMP) prometheus
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/pytest

eval: $(STAMP)
	$(BIN)/rcabot eval ../shared/datasets --engine baro

# the shipped calibration and the results page, both from the saved evaluations
# (scripts/results.sh re-runs them)
results: $(STAMP)
	$(BIN)/rcabot calibrate results --out rca/calibration.json
	$(BIN)/rcabot report results --out docs/results.md --plot docs/results.svg

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
