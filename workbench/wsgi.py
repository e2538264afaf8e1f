import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "workbench.settings.base")
django_application = get_wsgi_application()

# The first request's one-off work (the URLconf's imports, the reverse tables, the frame template)
# done now, while the process starts, not in a researcher's first request (workbench.warmup).
from workbench.warmup import warm_up  # noqa: E402 - needs the settings loaded above

warm_up()

# The API's per-unit requests take a shorter way to the same answers (annotations.apis.fastlane).
from annotations.apis.fastlane import FastLane  # noqa: E402 - needs the settings loaded above

application = FastLane(django_application)
