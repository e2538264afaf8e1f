"""Deployment tooling that runs the workbench the way production does (not imported by the app)."""
