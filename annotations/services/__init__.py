"""Writes. One module per sub-domain: imports (a package), import_jobs, campaigns, judgements, projects."""
