"""Analysis of judgements and metric scores.

Pure computations (`agreement`, `correlation`, `systems`, `spans`, `severity_scale`) take
numpy arrays and know nothing of Django; the reader (`annotations.selectors.judgements`:
complete judgements only, included annotators only when quality control is in use) and
`annotations.selectors.outputs` read the database; `report` joins the two for the commands,
API and pages. The layers: docs/architecture.md.
"""
