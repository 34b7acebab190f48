# The two quick-start commands: `make serve` and `make test`. Both create or reuse .venv.
PYTHON ?= python3
VENV ?= .venv
BIN = $(VENV)/bin
PORT ?= 8000
# Serving needs only the package; the tests add their tools on top.
SERVE_STAMP = $(VENV)/.installed-serve
STAMP = $(VENV)/.installed-test
# MkDocs and Material print a notice about their future on every run: not the reader's concern.
export NO_MKDOCS_2_WARNING = 1

.PHONY: serve test lint build check verify new bench bench-build bench-search words recall reproduce clean

$(SERVE_STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[site]'
	touch $(SERVE_STAMP)

$(STAMP): $(SERVE_STAMP)
	$(BIN)/python -m pip install --quiet -e '.[site,test]'
	touch $(STAMP)

serve: $(SERVE_STAMP)
	@$(BIN)/python scripts/port_free.py $(PORT)
	$(BIN)/mkdocs serve --dirty --livereload --dev-addr 127.0.0.1:$(PORT)

build: $(SERVE_STAMP)
	$(BIN)/mkdocs build --strict

check: $(SERVE_STAMP)
	$(BIN)/encyclopedia check

# Against the package index (cached in ~/.cache/encyclopedia): signature sources, versions, pins.
verify: $(SERVE_STAMP)
	$(BIN)/encyclopedia verify

# make new ID=nccl-ib-timeout CATEGORY=distributed [TITLE="NCCL InfiniBand timeout"]
new: $(SERVE_STAMP)
	$(BIN)/encyclopedia new "$(ID)" --category "$(CATEGORY)" $(if $(TITLE),--title "$(TITLE)")

bench: $(STAMP)
	$(BIN)/python scripts/bench_diagnose.py

# Build time, peak memory, plugin overhead and the preview's edit-to-reload in Chromium (SIZES="shipped 1000").
bench-build: $(STAMP)
	$(BIN)/python scripts/bench_build.py $(SIZES)

# Builds sites of 1,000 and 5,000 synthetic entries (minutes on two cores); SITES=dir keeps them.
bench-search: $(STAMP)
	$(BIN)/python scripts/bench_search.py $(if $(SITES),--sites $(SITES))

# Words of each entry page as a phone shows them: the median, the most common failures, the longest.
words: $(STAMP)
	$(BIN)/mkdocs build -q -d build/site-words
	$(BIN)/python scripts/page_words.py build/site-words

# Zensical's config, made from mkdocs.yml (tests/test_hosts.py checks it is up to date).
zensical.yml: mkdocs.yml scripts/zensical_config.py
	$(PYTHON) scripts/zensical_config.py

# ruff's checks and its formatter's, then strict types over the package, tests and scripts.
lint: $(STAMP)
	$(BIN)/ruff check generator tests scripts
	$(BIN)/ruff format --check generator tests scripts
	$(BIN)/mypy

test: $(STAMP) lint
	$(BIN)/pytest

clean:
	rm -rf site $(VENV)

recall: $(STAMP)
	$(BIN)/python scripts/recall.py --misses
	$(BIN)/python scripts/recall.py --cases tests/recall_metrics --misses

# Reproducers run against a real PyTorch in its own environment: the site does not depend on it.
TORCH_VENV ?= .venv-torch
TORCH_STAMP = $(TORCH_VENV)/.installed
REPRODUCED ?= entries/_reproduced.json

$(TORCH_STAMP): scripts/reproduce-requirements.txt
	$(PYTHON) -m venv $(TORCH_VENV)
	$(TORCH_VENV)/bin/python -m pip install --quiet -r scripts/reproduce-requirements.txt
	touch $(TORCH_STAMP)

# Other sets of releases (a version boundary runs on both sides): each file pins the packages
# that differ from the current set; what they need besides is resolved against the current set,
# and only what changes goes into a folder that comes first on the scripts' import path.
SETS = $(patsubst scripts/reproduce-sets/%.txt,%,$(wildcard scripts/reproduce-sets/*.txt))
SET_STAMPS = $(foreach s,$(SETS),$(TORCH_VENV)/sets/$(s)/.installed)

$(TORCH_VENV)/sets/%/.installed: scripts/reproduce-sets/%.txt $(TORCH_STAMP)
	$(TORCH_VENV)/bin/python scripts/install_reproduce_set.py $< $(TORCH_VENV)/sets/$*
	touch $@

reproduce: $(SERVE_STAMP) $(TORCH_STAMP) $(SET_STAMPS)
	@mkdir -p $(dir $(REPRODUCED))
	$(BIN)/encyclopedia reproduce --python $(TORCH_VENV)/bin/python --sets $(TORCH_VENV)/sets \
		--out $(REPRODUCED) $(IDS)
