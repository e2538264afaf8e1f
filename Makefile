# Two commands: `make run` and `make test` (`make test-fast` for the edit-test loop). Everything they need installs here.
SHELL := /bin/bash
PY := .venv/bin/python
# The application's requirements (`make run`) and the test tools on top (`make test`): a first
# `make run` does not wait for the browser, fuzzing and reference-implementation packages.
APP_STAMP := .venv/.installed-app-$(shell cat requirements.txt | sha1sum | cut -c1-12)
DEV_STAMP := .venv/.installed-dev-$(shell cat requirements.txt requirements-dev.txt | sha1sum | cut -c1-12)
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test test-fast lint lint-imports venv venv-dev services browser haproxy multihost multihost-down speech axe node js-test localdb stop migrate demo worker bench clean static docs docs-site

venv: $(APP_STAMP)
$(APP_STAMP): requirements.txt
	test -x $(PY) || python3 -m venv .venv
	$(PY) -m pip install -q --disable-pip-version-check -r requirements.txt
	rm -f .venv/.installed-app-*; touch $@

venv-dev: $(DEV_STAMP)
$(DEV_STAMP): requirements.txt requirements-dev.txt | $(APP_STAMP)
	$(PY) -m pip install -q --disable-pip-version-check -r requirements-dev.txt
	rm -f .venv/.installed-dev-*; touch $@

# Local settings for `make run` and the CLI: debug mode and a secret key of this checkout's own
# (completion codes and handles are HMACs keyed with it: a shared public key would let anyone
# compute them). No DATABASE_URL here: set one (environment or .env) to use your own PostgreSQL.
.env:
	printf 'DJANGO_DEBUG=1\nDJANGO_SECRET_KEY=%s\n' "$$(python3 -c 'import secrets; print(secrets.token_urlsafe(50))')" > .env

# The database: DATABASE_URL when given (environment or .env), otherwise an embedded PostgreSQL
# from a wheel under var/pgdata (no system server, no psql needed; `make stop` stops it).
localdb: .env venv
	@grep -q '^DJANGO_SECRET_KEY=' .env || printf 'DJANGO_SECRET_KEY=%s\n' "$$(python3 -c 'import secrets; print(secrets.token_urlsafe(50))')" >> .env
	@$(PY) -m workbench.localdb ensure

stop:
	@$(PY) -m workbench.localdb stop

# Debian's Chromium for the browser tests (Playwright drives it; no browser download).
browser:
	@command -v chromium >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null)

# Debian's HAProxy and PgBouncer for the multi-host test (tests/deploy/test_multihost.py), as root like `browser`;
# elsewhere that test says what it lacks and is skipped.
haproxy:
	@(command -v haproxy && command -v pgbouncer) >/dev/null || [ "$$(id -u)" != 0 ] || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy pgbouncer >/dev/null)

# Two web hosts and two Celery worker hosts in network namespaces behind HAProxy, on DATABASE_URL and
# CELERY_BROKER_URL, until Ctrl-C (root; docs/how-to/deploy-multihost.md). `multihost-down` removes
# what a killed run left behind.
multihost: venv haproxy
	$(PY) -m deploy.multihost.cluster up

multihost-down:
	$(PY) -m deploy.multihost.cluster down

# Debian's espeak-ng: the ASR browser test (tests/browser/test_asr_audio.py) speaks its audio with it.
speech:
	@command -v espeak-ng >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq espeak-ng >/dev/null)

# Debian's Node.js for the JS checks (syntax and the span marker's unit tests; no npm packages).
node:
	@command -v node >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs >/dev/null)

# Every file the project serves under static/js parses (`node --check`), and the span marker's
# logic passes its unit tests (Node's built-in runner, tests/js/). No build step: the files are
# checked as the browser loads them.
js-test: node
	@find static/js -name '*.js' -print0 | sort -z | xargs -0 -n1 node --check
	node --test tests/js/

# axe-core (the npm package's tarball, checked against its pinned sha512) for the
# accessibility test, under var/axe-core/; with Python only, no node needed.
axe:
	@python3 tests/browser/axe_core.py

# PostgreSQL and Redis on 127.0.0.1, started if they are down.
services:
	@pg_isready -q -h 127.0.0.1 -p 5432 || pg_ctlcluster --skip-systemctl-redirect $$(ls /etc/postgresql) main start
	@for i in $$(seq 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
	@redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 || redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no
	@for i in $$(seq 30); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 1; done

migrate: venv localdb
	$(PY) manage.py migrate --noinput

demo: migrate
	$(PY) manage.py load_demo

# Production set-up (README "Configuration for production"): migrate, and collect the static
# files (hashed, compressed) that WhiteNoise serves under gunicorn.
static: venv
	$(PY) manage.py migrate --noinput
	$(PY) manage.py collectstatic --noinput

# The documentation site (MkDocs, mkdocs.yml): `make docs` serves docs/ with live reload on
# 127.0.0.1:8001; `docs-site` builds it with --strict (a broken link or a page missing from the nav
# fails) into var/docs-site, which the workbench serves at /docs/ (the pages' Help links).
# `make test` and `make run` build it; it is rebuilt only when docs/ or mkdocs.yml changed.
DOCS_SRC := mkdocs.yml $(shell find docs -type f 2>/dev/null)
docs: venv
	NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs serve -a 127.0.0.1:8001

docs-site: var/docs-site/index.html
var/docs-site/index.html: $(DOCS_SRC) | venv .env
	$(PY) manage.py build_docs

# Web server plus a Celery worker on the filesystem broker (no server needed), with beat (-B):
# it re-sends the chunks of metric runs whose messages were lost (metrics.services.recovery).
run: demo docs-site
	@mkdir -p var/celery/queue var/celery/processed var/celery/results var/celery/control
	@echo "Workbench on http://$(HOST):$(PORT)/  (log in as demo / demo)"
	@.venv/bin/celery -A workbench worker -B -s var/celery/beat-schedule -Q cpu,gpu --concurrency 1 --loglevel INFO >var/worker.log 2>&1 & \
	  worker=$$!; trap 'kill $$worker 2>/dev/null' EXIT INT TERM; \
	  $(PY) manage.py runserver $(HOST):$(PORT)

# Parallel runs with pytest-xdist, the default of `make test`: WORKBENCH_TEST_WORKERS processes (default: one per
# CPU, at most 4, none on a single CPU), each with its own test database (_gwN, cloned from one migrated template:
# tests/db_template.py) and Redis database (workbench/settings/test.py); WORKBENCH_TEST_WORKERS=0 runs the suite
# in this one process. `make test-fast` stays in one process (a narrowed run would wait for the workers to start)
# unless WORKBENCH_TEST_WORKERS is given. --dist loadfile: a module's tests stay in one process, so its module
# fixtures are built once. docs/how-to/testing.md ("Parallel runs") has the figures.
ifeq ($(origin WORKBENCH_TEST_WORKERS),undefined)
WORKBENCH_TEST_WORKERS := $(shell n=$$(nproc 2>/dev/null || echo 1); if [ $$n -ge 4 ]; then echo 4; elif [ $$n -ge 2 ]; then echo $$n; else echo 0; fi)
FAST_WORKERS := 0
else
FAST_WORKERS := $(WORKBENCH_TEST_WORKERS)
endif
xdist = $(if $(filter-out 0,$(1)),-n $(1) --dist loadfile,)

# The whole suite (what CI runs, through .ci/run), after the lint, the JS checks and the docs build.
# Prints the 25 slowest tests (pytest.ini).
# The project's modules are compiled once first, and the run may cache bytecode (pytest's rewritten test
# modules too): where PYTHONDONTWRITEBYTECODE is set (it is on CI's machines), every process the suite
# starts (pytest-xdist's, Celery workers, gunicorn, subprocess imports) would compile them from source
# again: `manage.py check` 2.7 CPU s without the cache, 2.1 with it.
test: lint venv-dev .env services browser haproxy speech axe js-test docs-site
	$(PY) -m compileall -q -j 0 annotations metrics workbench tests manage.py
	env -u PYTHONDONTWRITEBYTECODE DJANGO_SETTINGS_MODULE=workbench.settings.test $(PY) -m pytest $(call xdist,$(WORKBENCH_TEST_WORKERS)) $(PYTEST_ARGS)

# The edit-test loop: no browser, no Celery worker, nothing marked slow (docs/how-to/testing.md).
# Narrow it further with PYTEST_ARGS, e.g. `make test-fast PYTEST_ARGS=tests/metrics`.
test-fast: venv-dev .env services
	DJANGO_SETTINGS_MODULE=workbench.settings.test $(PY) -m pytest $(call xdist,$(FAST_WORKERS)) -m "not browser and not worker and not slow" $(PYTEST_ARGS)

# Ruff (ruff.toml): lint, and the formatting checked, not changed (`.venv/bin/ruff format` changes it);
# then the layers.
lint: venv-dev
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	$(MAKE) --no-print-directory lint-imports

# The import contracts of `.importlinter` (import-linter): the annotation wing's layers, every import
# counted, those inside functions too; `metrics.scorers` imports no Django (docs/architecture.md).
lint-imports: venv-dev
	.venv/bin/lint-imports --no-cache

bench: venv-dev
	$(PY) bench/run_all.py

clean:
	rm -rf var/*.sqlite3 var/celery var/worker.log
