"""Metric runs and stored scores (filled in by the metric-run issue)."""
