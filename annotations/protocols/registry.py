"""The protocols by name: the only place that lists them.

A protocol is registered, not migrated: `Campaign.protocol` is a plain name that this registry
validates. The protocols are the classes named by dotted import paths in the setting
`WORKBENCH_PROTOCOLS` (default: the built-in ones, `DEFAULT_PROTOCOLS`), so a research group can
ship a protocol in its own package and list it there, as metrics are listed by import path
(metrics/scorers/registry.py). They are imported on first use, not when this module is.
"""

from __future__ import annotations

import threading
from dataclasses import replace

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string

from annotations.protocols.base import Protocol
from annotations.protocols.options import STRINGS, Option

DEFAULT_PROTOCOLS = (
    "annotations.protocols.likert.Likert",
    "annotations.protocols.rankme.RankMe",
    "annotations.protocols.pairwise.Pairwise",
    "annotations.protocols.bws.BestWorst",
    "annotations.protocols.esa.Esa",
    "annotations.protocols.cesa.Cesa",
    "annotations.protocols.mqm.Mqm",
    "annotations.protocols.post_edit.PostEdit",
)

# name -> instance, filled from the setting on first use (`protocols()`); the same dict object
# throughout, so a reference taken from it stays valid after a reload.
PROTOCOLS: dict[str, Protocol] = {}
_loaded = False
# The first lookups of a gunicorn process come from several threads at once: one loads, the others
# wait for it (unlocked, two loads interleaved and registered a protocol twice: a 500 on the first
# requests of a web host, found by tests/deploy/test_multihost.py).
_LOCK = threading.RLock()


def configured() -> tuple[str, ...]:
    """The import paths of the protocols in use (WORKBENCH_PROTOCOLS, else the built-in ones)."""
    return tuple(getattr(settings, "WORKBENCH_PROTOCOLS", None) or DEFAULT_PROTOCOLS)


def _load() -> None:
    global _loaded
    with _LOCK:
        if _loaded:  # another thread loaded it while this one waited
            return
        loaded: dict[str, Protocol] = {}
        for path in configured():
            cls = import_string(path)
            if not (isinstance(cls, type) and issubclass(cls, Protocol)) or not cls.name:
                raise TypeError(f"WORKBENCH_PROTOCOLS: {path} is not a Protocol subclass with a name")
            _add(cls(), into=loaded)
        PROTOCOLS.clear()
        PROTOCOLS.update(loaded)
        _loaded = True


def protocols() -> dict[str, Protocol]:
    """Every registered protocol by name, in the setting's order."""
    if not _loaded:
        _load()
    return PROTOCOLS


@receiver(setting_changed)
def _reload(*, setting, **kwargs) -> None:
    # override_settings(WORKBENCH_PROTOCOLS=...) in tests: the next lookup reads the new list.
    global _loaded
    if setting == "WORKBENCH_PROTOCOLS":
        with _LOCK:
            _loaded = False
            PROTOCOLS.clear()


def register(protocol: Protocol) -> Protocol:
    """Add a protocol instance (the setting is the usual way; this is for code that builds one).
    The setting's protocols are loaded first, so they do not replace it."""
    with _LOCK:
        protocols()
        return _add(protocol)


def _add(protocol: Protocol, into: dict[str, Protocol] | None = None) -> Protocol:
    into = PROTOCOLS if into is None else into
    if protocol.name in into:
        raise ValueError(f"protocol {protocol.name!r} is registered twice")
    if len(protocol.name) > 20:  # Campaign.protocol's max_length
        raise ValueError(f"protocol name {protocol.name!r} is longer than 20 characters")
    into[protocol.name] = protocol
    return protocol


def get(name: str) -> Protocol:
    """The protocol called `name` (KeyError names the known ones)."""
    found = protocols()
    try:
        return found[str(name)]
    except KeyError:
        raise KeyError(f"unknown protocol {name!r}; known: {', '.join(found)}") from None


def of(campaign) -> Protocol:
    """The protocol of a campaign."""
    return get(campaign.protocol)


def names() -> list[str]:
    return list(protocols())


def label(name: str) -> str:
    """A protocol's label for pages and the card; the bare name when it is not registered (a
    campaign whose protocol was taken out of the setting still shows)."""
    found = protocols().get(str(name))
    return found.label if found is not None else str(name)


def setup_fields() -> dict[str, list[str]]:
    """Each protocol's own fields of the campaign set-up form (the page shows them for it alone)."""
    return {p.name: list(p.setup_fields) for p in protocols().values()}


def option_union() -> list[Option]:
    """Every option name of the registered protocols once, as the first protocol declares it (a
    list option with the choices of all): the set-up form's fields and `create_campaign`'s flags."""
    found: dict[str, Option] = {}
    for protocol in protocols().values():
        for option in protocol.options:
            first = found.setdefault(option.name, option)
            if option.type == STRINGS and first is not option:
                found[option.name] = replace(first, choices=tuple(dict.fromkeys(first.choices + option.choices)))
    return list(found.values())


def setup_hints() -> dict[str, dict]:
    """What the set-up page changes when a protocol is chosen: the scale a new criterion gets, and
    each option's default, bounds and help (the fields are shared by name across protocols)."""
    hints = {}
    for p in protocols().values():
        scale = p.default_scale or p.form_scale
        hints[p.name] = {
            "scale": list(scale) if scale and p.has_scale else None,
            "options": {
                o.name: {
                    "default": o.default if not isinstance(o.default, (list, dict)) or o.type == "strings" else None,
                    "min": o.minimum,
                    "max": o.maximum,
                    "help": o.help,
                    "label": o.label,
                }
                for o in p.options
            },
        }
    return hints


def choices() -> list[tuple[str, str]]:
    """(name, label) of every protocol, for forms and API serializers."""
    return [(p.name, p.label) for p in protocols().values()]
