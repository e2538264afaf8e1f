"""Several "hosts" on one Linux machine: network namespaces, gunicorn and Celery in each, HAProxy in front
(`deploy.multihost.cluster`; how-to: docs/how-to/deploy-multihost.md)."""
