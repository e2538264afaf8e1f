"""Analysis of judgements and metric scores.

Pure computations (`agreement`, `correlation`, `systems`, `spans`) take numpy
arrays and know nothing of Django; `selectors` reads the database into those
arrays (complete judgements only, included annotators only when quality
control is in use); `report` joins the two for the commands, API and pages.
"""
