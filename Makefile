# Two commands: `make run` and `make test`. Everything they need installs here.
SHELL := /bin/bash
PY := .venv/bin/python
STAMP := .venv/.installed-$(shell sha1sum requirements.txt | cut -c1-12)
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test venv services browser axe localdb migrate demo worker bench clean static

venv: $(STAMP)
$(STAMP): requirements.txt
	test -x $(PY) || python3 -m venv .venv
	$(PY) -m pip install -q --disable-pip-version-check -r requirements.txt
	rm -f .venv/.installed-*; touch $@

# Local settings for `make run` and the CLI: debug mode, the local PostgreSQL
# (database `workbench`), filesystem broker. PostgreSQL, not SQLite: handing out
# units relies on row locks with SKIP LOCKED and PostgreSQL functions.
LOCAL_DB_URL := postgres://postgres@127.0.0.1:5432/workbench
# A random secret key, made once: with a public one, completion codes (HMACs keyed with it)
# could be computed offline by anyone.
.env:
	printf 'DJANGO_DEBUG=1\nDATABASE_URL=$(LOCAL_DB_URL)\nDJANGO_SECRET_KEY=%s\n' "$$(python3 -c 'import secrets; print(secrets.token_urlsafe(50))')" > .env

# The local database, created if missing (an older .env without DATABASE_URL gains it).
localdb: .env services
	@grep -q '^DATABASE_URL=' .env || printf 'DATABASE_URL=$(LOCAL_DB_URL)\n' >> .env
	@grep -q '^DJANGO_SECRET_KEY=' .env || printf 'DJANGO_SECRET_KEY=%s\n' "$$(python3 -c 'import secrets; print(secrets.token_urlsafe(50))')" >> .env
	@psql -h 127.0.0.1 -U postgres -Atc "SELECT 1 FROM pg_database WHERE datname = 'workbench'" | grep -q 1 \
	  || createdb -h 127.0.0.1 -U postgres workbench

# Debian's Chromium for the browser tests (Playwright drives it; no browser download).
browser:
	@command -v chromium >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null)

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

# Web server plus a Celery worker on the filesystem broker (no server needed).
run: demo
	@mkdir -p var/celery/queue var/celery/processed var/celery/results var/celery/control
	@echo "Workbench on http://$(HOST):$(PORT)/  (log in as demo / demo)"
	@.venv/bin/celery -A workbench worker -Q cpu,gpu --concurrency 1 --loglevel INFO >var/worker.log 2>&1 & \
	  worker=$$!; trap 'kill $$worker 2>/dev/null' EXIT INT TERM; \
	  $(PY) manage.py runserver $(HOST):$(PORT)

test: venv .env services browser axe
	DJANGO_SETTINGS_MODULE=workbench.settings.test $(PY) -m pytest $(PYTEST_ARGS)

bench: venv
	$(PY) bench/run_all.py

clean:
	rm -rf var/*.sqlite3 var/celery var/worker.log
