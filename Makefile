# compsense: `make reproduce` runs the notebook pipeline, `make test` runs the tests.
# Both create .venv and install what is missing (pinned by constraints.txt) on first use.
PYTHON  ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
PROFILE ?= local
ONLY    ?=
SET     ?=
# The Hugging Face hub is unreachable on this project's machines; online users: make ... HF_HUB_OFFLINE=0
export HF_HUB_OFFLINE ?= 1

.PHONY: install reproduce test test-unit test-notebooks lab doctor lock clean-notebooks

$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -c constraints.txt -e ".[dev]"
	touch $@

install: $(VENV)/.installed

# The pipeline is dvc.yaml (compsense.pipeline.dvcfile writes it): one stage per profile and notebook,
# `<profile>-<key>`. ONLY=02,03: those stages (and what they need that changed); SET='training_ab.seeds=[42,43]':
# an experiment (`dvc exp run -S`, which writes the value into params/$(PROFILE).yaml; `dvc exp show` lists them).
# `dvc exp run` takes no --glob: without ONLY it is given every stage of the profile by name.
comma   := ,
NAMED    = $(foreach k,$(subst $(comma), ,$(ONLY)),$(PROFILE)-$(k))
TARGETS  = $(if $(ONLY),$(NAMED),--glob '$(PROFILE)-*')
reproduce: install
ifeq ($(SET),)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/dvc repro $(TARGETS)
else
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/dvc exp run $(foreach s,$(SET),-S 'params/$(PROFILE).yaml:$(s)') $(if $(ONLY),$(NAMED),$(shell $(BIN)/dvc stage list --name-only 2>/dev/null | grep '^$(PROFILE)-'))
endif

# Runs write figures into their profile's figures_dir (under runs/); figures/ (committed) changes only here:
# the profile's report (runs/<profile>/report/): its figures and tables, then the README's result tables from them.
.PHONY: figures readme-tables
# PIECE=NAME: only the files that declared piece lists (`publishes` in params/pieces.yaml), from its last run.
PIECE   ?=
figures: install
ifeq ($(PIECE),)
	$(BIN)/python -m compsense.pipeline.publish --profile $(PROFILE)
	$(BIN)/python scripts/notebook_pages.py --profile $(PROFILE)
else
	$(BIN)/python -m compsense.pipeline.publish --piece $(PIECE)
endif
	$(BIN)/python scripts/readme_tables.py

readme-tables: install
	$(BIN)/python scripts/readme_tables.py

test: test-unit test-notebooks

test-unit: install
	$(BIN)/python -m pytest tests -q

test-notebooks: install
	$(BIN)/python -m pytest --nbval-lax notebooks/ -q -p no:cacheprovider

# While editing: everything but the tests marked slow (training, notebooks, pipelines); `make test` runs all.
.PHONY: test-fast
test-fast: install
	$(BIN)/python -m pytest tests -q -m "not slow"

lab: install
	$(BIN)/jupyter lab notebooks/

doctor: install
	$(BIN)/python -m compsense doctor --profile $(PROFILE)

lock: install
	$(BIN)/python -m pip freeze --exclude-editable | sed -e 's/+cpu$$//' -e '/^-e /d' > constraints.txt.new
	(echo "# Every version a fresh install resolves (pip freeze of a working .venv). Regenerate: make lock"; cat constraints.txt.new) > constraints.txt
	rm constraints.txt.new

clean-notebooks: install
	$(BIN)/python scripts/clean_notebooks.py
