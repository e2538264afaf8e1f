#!/usr/bin/env python
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "workbench.settings.base")
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        settings.INSTALLED_APPS  # loads the settings: a missing variable is one line, not a traceback
    except ImproperlyConfigured as exc:
        sys.exit(
            f"configuration: {exc}. Put it in the environment or in .env "
            f"(`make .env` writes one for local use; README, 'Configuration for production')."
        )
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
