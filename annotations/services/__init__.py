"""Writes. One module per sub-domain: imports, campaigns, judgements, projects."""
