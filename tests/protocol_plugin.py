"""A protocol that only the tests register, as a research group would ship one in its own package:
a 5-point Likert variant with a name of its own, listed in WORKBENCH_PROTOCOLS beside the built-in
ones. Tests parametrised over `every_protocol()` take the `registered` fixture (tests/conftest.py),
which registers it for the test; it needs no migration and no edit of product code.
"""

from annotations.protocols.likert import Likert
from annotations.protocols.registry import DEFAULT_PROTOCOLS


class LikertFive(Likert):
    name = "likert5"
    label = "5-point Likert (test plugin)"
    # A fixed 1-5 scale: a campaign need not name one.
    scale_required = False
    default_scale = (1.0, 5.0)
    # Likert's page as it is: its template, shortcuts and script (which registers "likert").
    script_registers = "likert"


PLUGIN_PROTOCOLS = ("tests.protocol_plugin.LikertFive",)
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
