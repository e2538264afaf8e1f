"""Settings read from the environment (django-environ).

`make run` sets DJANGO_DEBUG=1 and uses SQLite plus Celery's filesystem broker;
production sets DATABASE_URL, CELERY_BROKER_URL and DJANGO_SECRET_KEY.
"""
from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = BASE_DIR / "var"

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DEBUG = env.bool("DJANGO_DEBUG", default=False)
if DEBUG:
    SECRET_KEY = env("DJANGO_SECRET_KEY", default="insecure-dev-key-only-for-make-run")
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
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "annotations",
    "metrics",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
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
            ],
        },
    },
]

DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'workbench.sqlite3'}"),
}
DATABASES["default"]["ATOMIC_REQUESTS"] = False
# Persistent connections: opening one per request costs more than most requests.
DATABASES["default"]["CONN_MAX_AGE"] = env.int("DJANGO_CONN_MAX_AGE", default=60)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "project-list"
LOGOUT_REDIRECT_URL = "login"

# Uploads: datasets can be large; the per-text limit is checked by the importer.
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("WORKBENCH_UPLOAD_MAX_BYTES", default=200 * 1024 * 1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
# Longest accepted text (source, reference or output) in characters.
WORKBENCH_MAX_TEXT_CHARS = env.int("WORKBENCH_MAX_TEXT_CHARS", default=20_000)
# Who may create projects in the browser and the API: "owners" (staff users and
# users who already own a project), "staff" (staff users only) or "anyone".
WORKBENCH_PROJECT_CREATORS = env.str("WORKBENCH_PROJECT_CREATORS", default="owners")

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.TokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "workbench.exceptions.api_exception_handler",
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
}

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
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "cpu"
CELERY_TASK_ROUTES = {"metrics.tasks.*": {"queue": env("WORKBENCH_METRIC_QUEUE", default="cpu")}}

# Metrics: device for model inference (cpu, cuda, cuda:N, auto) and model paths.
WORKBENCH_DEVICE = env("WORKBENCH_DEVICE", default="auto")
# JSON object mapping a configured model name to a local directory.
WORKBENCH_MODELS = env.json("WORKBENCH_MODELS", default={})

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env("DJANGO_LOG_LEVEL", default="WARNING")},
}
