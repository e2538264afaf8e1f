"""Allocation of units to annotators: which units are worth handing out next (`adaptive`)."""
