"""A protocol that only the tests register, as a research group would ship one in its own package:
a 3-point Likert variant with a name of its own, listed in WORKBENCH_PROTOCOLS beside the built-in
ones. Tests parametrised over `every_protocol()` take the `registered` fixture (tests/conftest.py),
which registers it for the test; it needs no migration and no edit of product code.
"""
from annotations.protocols.likert import Likert
from annotations.protocols.registry import DEFAULT_PROTOCOLS


class LikertThree(Likert):
    name = "likert3"
    label = "3-point Likert (test plugin)"
    # A fixed 1-3 scale: a campaign need not name one.
    scale_required = False
    default_scale = (1.0, 3.0)


PLUGIN_PROTOCOLS = ("tests.protocol_plugin.LikertThree",)
WITH_PLUGIN = [*DEFAULT_PROTOCOLS, *PLUGIN_PROTOCOLS]


def every_protocol() -> list[str]:
    """The names a registry-parametrised test runs over: the built-in protocols and the plugin."""
    from django.utils.module_loading import import_string

    return [import_string(path).name for path in WITH_PLUGIN]


def campaign_settings(name: str) -> dict:
    """campaign_create's keywords a campaign of protocol `name` needs beyond its defaults (only a
    scale, for protocols that require one), read from what the class declares."""
    from annotations import protocols

    return {"scale_min": 0, "scale_max": 100} if protocols.get(name).scale_required else {}
