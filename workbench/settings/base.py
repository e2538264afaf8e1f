"""Settings read from the environment (django-environ).

`make run` sets DJANGO_DEBUG=1 and uses DATABASE_URL when given, otherwise an
embedded PostgreSQL under var/ (workbench/localdb.py), plus Celery's filesystem broker;
production sets DATABASE_URL, CELERY_BROKER_URL and DJANGO_SECRET_KEY, and
runs behind a TLS-terminating proxy that sets `X-Forwarded-Proto` (trusted
here): HTTPS only, HSTS, secure cookies; `manage.py check --deploy` passes.
"""

import os
import secrets
from datetime import timedelta
from pathlib import Path

import environ
from csp.constants import NONE, SELF, UNSAFE_INLINE

from workbench.static_headers import static_headers

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = BASE_DIR / "var"

env = environ.Env()
# `make run` writes a .env with DJANGO_DEBUG=1; a production host sets
# DJANGO_READ_DOT_ENV_FILE=0 (or has no .env) so nothing local leaks in.
if env.bool("DJANGO_READ_DOT_ENV_FILE", default=True):
    environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DEBUG = env.bool("DJANGO_DEBUG", default=False)


def _local_secret_key() -> str:
    """A random key made once for this checkout (var/secret_key), for `make run` without a key in
    .env: a fixed public development key would let anyone compute the completion codes (HMACs keyed
    with it) and forge sessions of a demo reachable on a network."""
    path = VAR_DIR / "secret_key"
    try:
        key = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        key = ""
    if len(key) < 40:
        key = secrets.token_urlsafe(50)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(key + "\n")
    return key


if DEBUG:
    SECRET_KEY = env("DJANGO_SECRET_KEY", default=None) or _local_secret_key()
else:
    # No default: a production deployment that forgets the key must not start.
    SECRET_KEY = env("DJANGO_SECRET_KEY")

ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "axes",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "annotations",
    "metrics",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Static files under gunicorn (compressed, cached forever by their hashed names).
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "csp.middleware.CSPMiddleware",
    # Refuses an oversized body before anything reads it (after the two
    # above, so even the refusal carries the security headers).
    "workbench.middleware.RequestSizeLimitMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # An upload body above the JSON limit only from a researcher, refused unread otherwise.
    "workbench.middleware.UploadGateMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # A join-link visitor's session reaches only its campaign's annotate pages (annotations.studies).
    "annotations.studies.middleware.JoinConfinementMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # A DomainError raised by a page view: a 400 with its message (the API maps it itself).
    "workbench.middleware.DomainErrorMiddleware",
    # Last, as its documentation asks: answers locked-out logins with 429.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "workbench.urls"
WSGI_APPLICATION = "workbench.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                # Issue 45: the age of figures a worker computed, and the progress of new ones.
                "annotations.views.figures.figures_context",
            ],
        },
    },
]

# Without DATABASE_URL (environment or .env): the embedded PostgreSQL that `make run` starts under
# var/ (workbench/localdb.py writes its URL there), else a local server's database `workbench`.
_LOCALDB_URL = VAR_DIR / "localdb.url"
DATABASES = {
    # PostgreSQL only: handing out units relies on its row locks (SKIP LOCKED), COPY and trigram indexes.
    "default": env.db(
        "DATABASE_URL",
        default=(
            _LOCALDB_URL.read_text().strip()
            if _LOCALDB_URL.is_file()
            else "postgres://postgres@127.0.0.1:5432/workbench"
        ),
    ),
}
DATABASES["default"]["ATOMIC_REQUESTS"] = False
# Persistent connections: opening one per request costs more than most requests.
DATABASES["default"]["CONN_MAX_AGE"] = env.int("DJANGO_CONN_MAX_AGE", default=60)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# Behind PgBouncer in transaction mode: `.iterator()` must not open a named (server-side) cursor, which
# would outlive its transaction's server connection (docs/how-to/deploy-multihost.md).
DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = env.bool("DJANGO_DISABLE_SERVER_SIDE_CURSORS", default=False)
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Django's backend with the health check above at most once a second per connection,
    # not before every request (workbench.db.postgresql).
    DATABASES["default"]["ENGINE"] = "workbench.db.postgresql"
    # The statements of the annotation requests (`annotations.rows.cursor`) are
    # prepared on the server once run this many times on a connection, so
    # PostgreSQL stops parsing and planning them again: planning was most of its
    # time on those requests (bench/bench_annotation.py). Every other query binds
    # on the client and is never prepared, whatever this says. 0 turns it off,
    # e.g. behind a connection pooler in transaction mode.
    _prepare_threshold = env.int("WORKBENCH_DB_PREPARE_THRESHOLD", default=2)
    if _prepare_threshold > 0:
        DATABASES["default"].setdefault("OPTIONS", {})["prepare_threshold"] = _prepare_threshold
# Seconds a persistent connection goes without a health check after passing one (0: before every request).
WORKBENCH_DB_HEALTH_CHECK_SECONDS = env.float("WORKBENCH_DB_HEALTH_CHECK_SECONDS", default=1.0)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTHENTICATION_BACKENDS = [
    # First: refuses locked-out accounts and addresses before any password check.
    "workbench.security.LockoutBackend",
    # Django's, with a session's user loaded by one prepared statement; Django's own stays listed
    # for sessions that recorded it.
    "workbench.auth.ModelBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# Django's database sessions, read by one prepared statement (every annotate page request loads one).
SESSION_ENGINE = "workbench.sessions"

# Django's four validators, on every page and command that sets a password (the first-password
# page, password change, the admin, `changepassword`, `createsuperuser`).
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = env.path("WORKBENCH_STATIC_ROOT", default=VAR_DIR / "staticfiles")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Production serves `collectstatic`'s output with hashed names (WhiteNoise);
    # development serves the source folders as they are.
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage",
    },
}
# Security headers on the static files too (workbench.security.static_headers).
WHITENOISE_ADD_HEADERS_FUNCTION = static_headers
# Not `Access-Control-Allow-Origin: *` (WhiteNoise's default): the files are for the workbench's
# own pages only (Cross-Origin-Resource-Policy: same-origin), and the two headers contradicted.
WHITENOISE_ALLOW_ALL_ORIGINS = False
# Uploaded import files wait here for a worker; with workers on other
# machines it must be shared storage (the same path everywhere).
MEDIA_ROOT = env.path("WORKBENCH_MEDIA_ROOT", default=VAR_DIR / "media")
# Items' media (issue 41: audio, image, video): every item's media path is relative to this folder
# (files placed there, or extracted from a dataset's zip into datasets/<name>-<digest>/ under it).
# Apart from MEDIA_ROOT's exports and uploads, so no item can name one.
WORKBENCH_MEDIA_ROOT = env.path("WORKBENCH_ITEM_MEDIA_ROOT", default=Path(str(MEDIA_ROOT)) / "items")
# Largest media file (bytes); a dataset zip's files and total size once extracted are capped too.
WORKBENCH_MEDIA_MAX_BYTES = env.int("WORKBENCH_MEDIA_MAX_BYTES", default=50 * 1024 * 1024)
WORKBENCH_MEDIA_ZIP_MAX_FILES = env.int("WORKBENCH_MEDIA_ZIP_MAX_FILES", default=10_000)
WORKBENCH_MEDIA_ZIP_MAX_BYTES = env.int("WORKBENCH_MEDIA_ZIP_MAX_BYTES", default=2 * 1024 * 1024 * 1024)
# The documentation site (`manage.py build_docs` writes it from docs/ with MkDocs), served at /docs/
# by workbench.docs.docs_site: the pages' Help links lead there, with no external site.
WORKBENCH_DOCS_SITE = env.path("WORKBENCH_DOCS_SITE", default=VAR_DIR / "docs-site")

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "project-list"
LOGOUT_REDIRECT_URL = "login"

# Request sizes (workbench.middleware): every body is refused above
# WORKBENCH_REQUEST_MAX_BYTES before it is read, except file uploads to the
# import endpoints by an authenticated researcher or owner of some project,
# which may reach WORKBENCH_UPLOAD_MAX_BYTES and are streamed to a temporary
# file on disk, never held in memory. Anyone else's large upload: 413, unread.
WORKBENCH_REQUEST_MAX_BYTES = env.int("WORKBENCH_REQUEST_MAX_BYTES", default=1024 * 1024)
WORKBENCH_UPLOAD_MAX_BYTES = env.int("WORKBENCH_UPLOAD_MAX_BYTES", default=200 * 1024 * 1024)
# URL names of the views that take file uploads.
WORKBENCH_UPLOAD_URL_NAMES = [
    "api-dataset-list",
    "dataset-upload",
    "api-campaign-judgements-import",
    "campaign-judgements-import",
]
DATA_UPLOAD_MAX_MEMORY_SIZE = WORKBENCH_REQUEST_MAX_BYTES  # form fields, non-file parts
DATA_UPLOAD_MAX_NUMBER_FIELDS = 200
FILE_UPLOAD_HANDLERS = ["django.core.files.uploadhandler.TemporaryFileUploadHandler"]
# Imports of files above this size run on a Celery worker, with progress on
# the page; the web process never parses them.
WORKBENCH_IMPORT_ASYNC_BYTES = env.int("WORKBENCH_IMPORT_ASYNC_BYTES", default=2 * 1024 * 1024)
# Campaign sizes (annotations.services.units): a campaign of more units than this is refused
# when it is created, with its count; one of more than WORKBENCH_CAMPAIGN_PLAN_ASYNC_UNITS is
# planned by a Celery worker (its page shows the progress) instead of in the web request.
WORKBENCH_CAMPAIGN_MAX_UNITS = env.int("WORKBENCH_CAMPAIGN_MAX_UNITS", default=1_000_000)
WORKBENCH_CAMPAIGN_PLAN_ASYNC_UNITS = env.int("WORKBENCH_CAMPAIGN_PLAN_ASYNC_UNITS", default=20_000)
# Figures (issue 45): the analysis, quality and meta-evaluation pages of a campaign with more judged
# units (unit x annotator) than this read their figures from what a Celery worker computed
# (annotations.selectors.figures_cache, annotations.analysis.figure_jobs), showing the last one with
# its age while a new one is computed; smaller campaigns compute them in the request.
WORKBENCH_FIGURES_INLINE_MAX = env.int("WORKBENCH_FIGURES_INLINE_MAX", default=2000)
# After a submit, the figures pages asked for are computed again this many seconds later, once per
# campaign however many submits came meanwhile (0: only when a page finds them old).
WORKBENCH_FIGURES_DEBOUNCE_S = env.int("WORKBENCH_FIGURES_DEBOUNCE_S", default=5)
# Systems: an import that would leave a dataset with more than WORKBENCH_DATASET_MAX_SYSTEMS is
# refused (`line N:` of the first system over the cap), and a campaign of more than
# WORKBENCH_CAMPAIGN_MAX_SYSTEMS (ticked, or all of its dataset when none is) is refused at creation:
# set-up pages, allocation and analyses list every system, so their work grows with the count.
WORKBENCH_DATASET_MAX_SYSTEMS = env.int("WORKBENCH_DATASET_MAX_SYSTEMS", default=500)
WORKBENCH_CAMPAIGN_MAX_SYSTEMS = env.int("WORKBENCH_CAMPAIGN_MAX_SYSTEMS", default=100)
# The human-evaluation protocols offered, as dotted paths of Protocol classes
# (annotations.protocols.registry): empty means the built-in ones (its DEFAULT_PROTOCOLS). To add
# one from your own package, list the built-ins you keep and yours, e.g. in the environment
# WORKBENCH_PROTOCOLS=annotations.protocols.likert.Likert,mylab.protocols.Ranking. A protocol is a
# name in Campaign.protocol: adding or removing one needs no migration.
WORKBENCH_PROTOCOLS = env.list("WORKBENCH_PROTOCOLS", default=[])
# Longest accepted text (source, reference or output) in characters.
WORKBENCH_MAX_TEXT_CHARS = env.int("WORKBENCH_MAX_TEXT_CHARS", default=20_000)
# Every answer about an annotator's unit (handing it out, submitting it) takes at least this
# long, so the extra work of a control unit cannot be timed (annotations.timing); 0: off. Under
# load the floor in force rises above it with the recent answers' times.
WORKBENCH_UNIT_RESPONSE_FLOOR_MS = env.int("WORKBENCH_UNIT_RESPONSE_FLOOR_MS", default=150)
# Who may create projects in the browser and the API: "owners" (staff users and
# users who already own a project), "staff" (staff users only) or "anyone".
WORKBENCH_PROJECT_CREATORS = env.str("WORKBENCH_PROJECT_CREATORS", default="owners")

# The server's public address, which links printed by commands start with
# (`add_member --links`, `create_join_link`; pages use the request's own host).
# One-time login links (annotations.services.login_links): how long a link lives, and how many wrong tokens one address may
# try per WORKBENCH_LOGIN_LINK_FAILURE_MINUTES before it gets 429.
WORKBENCH_BASE_URL = env.str("WORKBENCH_BASE_URL", default="http://127.0.0.1:8000")
WORKBENCH_LOGIN_LINK_DAYS = env.int("WORKBENCH_LOGIN_LINK_DAYS", default=14)
WORKBENCH_LOGIN_LINK_FAILURE_LIMIT = env.int("WORKBENCH_LOGIN_LINK_FAILURE_LIMIT", default=20)
WORKBENCH_LOGIN_LINK_FAILURE_MINUTES = env.int("WORKBENCH_LOGIN_LINK_FAILURE_MINUTES", default=15)

# Shared by the web processes: API throttles count here. Production should
# point it at Redis (each gunicorn worker has its own local memory).
CACHES = {"default": env.cache_url("WORKBENCH_CACHE_URL", default="locmemcache://")}

# Proxies in front of the web process that append to X-Forwarded-For; the
# client's address (for lock-outs and throttles) is read that many hops from
# the right. 0: the address the connection came from.
WORKBENCH_TRUSTED_PROXIES = env.int("WORKBENCH_TRUSTED_PROXIES", default=0)

# Join-link requests (GET or POST /join/<token>/) per client address and minute; 0 = no limit.
WORKBENCH_JOIN_RATE = env.int("WORKBENCH_JOIN_RATE", default=30)

# Lock-out after failed logins (django-axes), on every login path (pages,
# admin, API token): per account and, separately, per address.
AXES_FAILURE_LIMIT = env.int("WORKBENCH_LOGIN_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = timedelta(minutes=env.int("WORKBENCH_LOGIN_LOCKOUT_MINUTES", default=15))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_RESET_ON_SUCCESS = True
AXES_CLIENT_IP_CALLABLE = "workbench.security.client_ip"
AXES_LOCKOUT_CALLABLE = "workbench.security.lockout_response"

# Seconds a web process keeps an API token's row (token and user) after looking it up; a token or
# user changed in the same process is looked up afresh at once, in another after at most this long
# (annotations.permissions). 0: a query on every request.
WORKBENCH_TOKEN_CACHE_SECONDS = env.float("WORKBENCH_TOKEN_CACHE_SECONDS", default=10.0)
# The same for the user of a session (workbench.auth): a user changed in another process counts
# there after at most this long; a logout (the session deleted) counts everywhere at once.
WORKBENCH_SESSION_USER_CACHE_SECONDS = env.float("WORKBENCH_SESSION_USER_CACHE_SECONDS", default=10.0)
# The API's per-unit requests (next-assignment, submit) answered without the middleware
# chain and DRF's dispatch, same answers (annotations.apis.fastlane); off: all through Django.
WORKBENCH_API_FAST_LANE = env.bool("WORKBENCH_API_FAST_LANE", default=True)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "annotations.permissions.TokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "workbench.exceptions.api_exception_handler",
    "DEFAULT_PARSER_CLASSES": [
        "workbench.parsers.StrictJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    # The token endpoint (annotations.apis.auth): per address and per account.
    "DEFAULT_THROTTLE_RATES": {
        "login-address": env("WORKBENCH_LOGIN_RATE_ADDRESS", default="30/min"),
        "login-account": env("WORKBENCH_LOGIN_RATE_ACCOUNT", default="10/min"),
    },
}

SPECTACULAR_SETTINGS = {
    "TITLE": "NLG evaluation workbench API",
    "DESCRIPTION": "Datasets, system outputs, campaigns and judgements.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Served from the sidecar package: the docs work with no internet.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Several models have a `status`: name each enum after its model.
    "ENUM_NAME_OVERRIDES": {
        "AssignmentStatusEnum": "annotations.models.Assignment.Status",
        "ImportJobStatusEnum": "annotations.models.ImportJob.Status",
        "JudgementStatusEnum": "annotations.models.JudgementBase.Status",
        "SeverityEnum": "annotations.models.ErrorSpan.Severity",
    },
}

# The Content-Security-Policy of every response (django-csp): no inline
# script anywhere, nothing from other origins.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF, UNSAFE_INLINE],
        "img-src": [SELF, "data:"],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    },
}

if not DEBUG:
    # Behind a TLS-terminating proxy: it sets X-Forwarded-Proto, which is
    # trusted (the proxy must overwrite what clients send).
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env.int("DJANGO_SECURE_HSTS_SECONDS", default=365 * 24 * 3600)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", default=True)
    SECURE_HSTS_PRELOAD = env.bool("DJANGO_SECURE_HSTS_PRELOAD", default=True)

# Celery. `make run` uses the filesystem transport (no server needed);
# tests and production use Redis via CELERY_BROKER_URL.
CELERY_BROKER_URL = env("CELERY_BROKER_URL", default="filesystem://")
CELERY_RESULT_BACKEND = env("CELERY_RESULT_BACKEND", default=None)
if CELERY_BROKER_URL.startswith("filesystem://"):
    _queue_dir = VAR_DIR / "celery" / "queue"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_queue_dir),
        "data_folder_out": str(_queue_dir),
        "processed_folder": str(VAR_DIR / "celery" / "processed"),
        # Exchange bindings; kombu's default is ./control in the working directory.
        "control_folder": str(VAR_DIR / "celery" / "control"),
        "store_processed": False,
    }
    CELERY_RESULT_BACKEND = CELERY_RESULT_BACKEND or f"file://{VAR_DIR / 'celery' / 'results'}"
else:
    # Redis re-delivers a message that a worker took but never acknowledged
    # (acks_late: it died mid-chunk) once it is older than the visibility
    # timeout, checked by every worker every `unacked_restore_interval` s
    # (kombu scans only every 10th check by default; throttle 1 scans each
    # time). Celery's default timeout is an hour; metric chunks are sized to
    # take seconds, so 90 s brings a killed worker's chunk back within about
    # 100 s. A chunk that runs longer than this is delivered a second time
    # while it runs: harmless (upserts, conditional updates) but wasted work.
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": env.int("WORKBENCH_BROKER_VISIBILITY_TIMEOUT", default=90),
        "unacked_restore_interval": env.int("WORKBENCH_BROKER_RESTORE_INTERVAL", default=10),
        "unacked_restore_throttle": 1,
    }
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# A worker that dies mid-task (SIGKILL, OOM) leaves its message to be re-delivered.
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_TASK_DEFAULT_QUEUE = "cpu"
CELERY_TASK_ROUTES = {"metrics.tasks.*": {"queue": env("WORKBENCH_METRIC_QUEUE", default="cpu")}}

# Lost broker messages (Redis killed, or restarted from an older snapshot, forgets the
# messages of chunks nobody has claimed yet): a run none of whose chunks has started,
# finished or reported progress for this many seconds has the messages of its unfinished
# chunks sent again (a queued run: its prepare message), by `metrics.requeue_stale`, which
# Celery beat sends every WORKBENCH_METRIC_REQUEUE_INTERVAL seconds (run beat once:
# `celery -A workbench beat`, or `worker -B` with a single worker). Above the broker's
# visibility timeout (a dead worker's own message comes back first) and above the longest
# chunk a model metric scores without reporting progress; a chunk is claimed in PostgreSQL,
# so a message sent twice scores nothing twice (metrics.services.chunks).
WORKBENCH_METRIC_CHUNK_STALE_SECONDS = env.float("WORKBENCH_METRIC_CHUNK_STALE_SECONDS", default=300.0)
WORKBENCH_METRIC_REQUEUE_INTERVAL = env.float("WORKBENCH_METRIC_REQUEUE_INTERVAL", default=60.0)
CELERY_BEAT_SCHEDULE = {
    "metrics-requeue-stale": {
        "task": "metrics.requeue_stale",
        "schedule": WORKBENCH_METRIC_REQUEUE_INTERVAL,
        # A check left waiting behind long work is dropped: the next one comes anyway.
        "options": {"queue": "cpu", "expires": WORKBENCH_METRIC_REQUEUE_INTERVAL},
    }
}

# Metrics: device for model inference (cpu, cuda, cuda:N, auto) and model paths.
WORKBENCH_DEVICE = env("WORKBENCH_DEVICE", default="auto")
# JSON object mapping a configured model name to a local directory.
WORKBENCH_MODELS = env.json("WORKBENCH_MODELS", default={})


# Directories metric options may name (metrics.scorers.files), colon-separated. A run's
# `model=` is a configured or packaged name, or a directory inside WORKBENCH_MODEL_DIRS;
# `baseline=`, `frequency_file=`, `templates_file=` and `templates=<path>` are files inside
# WORKBENCH_DATA_DIRS (a relative path is looked up in each). Links are followed only if
# they stay inside; only regular files, at most WORKBENCH_METRIC_FILE_MAX_BYTES each; read by
# the worker, never by the web process. Anything else: "not allowed or not found".
def _dirs(name: str, default: Path) -> list[str]:
    return [d for d in env.str(name, default=str(default)).split(":") if d.strip()]


WORKBENCH_MODEL_DIRS = _dirs("WORKBENCH_MODEL_DIRS", VAR_DIR / "models")
WORKBENCH_DATA_DIRS = _dirs("WORKBENCH_DATA_DIRS", VAR_DIR / "metric-files")
WORKBENCH_METRIC_FILE_MAX_BYTES = env.int("WORKBENCH_METRIC_FILE_MAX_BYTES", default=64 * 1024 * 1024)
# Test hook only: seconds each metric chunk waits before scoring (keeps one in flight).
WORKBENCH_METRIC_CHUNK_DELAY = env.float("WORKBENCH_METRIC_CHUNK_DELAY", default=0.0)
# Test hook only: a model metric's chunk, once it has stored progress inside it, waits until this
# file exists (tests/browser/test_learned_metrics.py sees the progress of a tiny model's chunk).
WORKBENCH_METRIC_PROGRESS_HOLD = env.str("WORKBENCH_METRIC_PROGRESS_HOLD", default="")
# At most this many seconds: a test that fails before it creates the file (or forgets it) must not leave
# the worker stuck on the chunk for ever; past it the chunk goes on and says so in the log.
WORKBENCH_METRIC_PROGRESS_HOLD_TIMEOUT = env.float("WORKBENCH_METRIC_PROGRESS_HOLD_TIMEOUT", default=120.0)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"client_errors": {"()": "workbench.outage.ClientErrorsWithoutTraceback"}},
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env("DJANGO_LOG_LEVEL", default="WARNING")},
    # A 403 or 404 of a page, or a 503 while the database restarts: one line, no traceback.
    "loggers": {"django.request": {"filters": ["client_errors"]}},
}
