from tests.annotations.views.conftest import annotator, dataset, outsider, owner, project, researcher  # noqa: F401
