"""The protocols by name: the only place that lists them."""
from __future__ import annotations

from dataclasses import replace

from annotations.protocols.base import Protocol
from annotations.protocols.bws import BestWorst
from annotations.protocols.cesa import Cesa
from annotations.protocols.esa import Esa
from annotations.protocols.likert import Likert
from annotations.protocols.mqm import Mqm
from annotations.protocols.options import STRINGS, Option
from annotations.protocols.pairwise import Pairwise
from annotations.protocols.rankme import RankMe

PROTOCOLS: dict[str, Protocol] = {}


def register(protocol: Protocol) -> Protocol:
    if protocol.name in PROTOCOLS:
        raise ValueError(f"protocol {protocol.name!r} is registered twice")
    PROTOCOLS[protocol.name] = protocol
    return protocol


for _cls in (Likert, RankMe, Pairwise, BestWorst, Esa, Cesa, Mqm):
    register(_cls())


def get(name: str) -> Protocol:
    """The protocol called `name` (KeyError names the known ones)."""
    try:
        return PROTOCOLS[str(name)]
    except KeyError:
        raise KeyError(f"unknown protocol {name!r}; known: {', '.join(PROTOCOLS)}") from None


def of(campaign) -> Protocol:
    """The protocol of a campaign."""
    return get(campaign.protocol)


def names() -> list[str]:
    return list(PROTOCOLS)


def setup_fields() -> dict[str, list[str]]:
    """Each protocol's own fields of the campaign set-up form (the page shows them for it alone)."""
    return {p.name: list(p.setup_fields) for p in PROTOCOLS.values()}


def option_union() -> list[Option]:
    """Every option name of the registered protocols once, as the first protocol declares it (a
    list option with the choices of all): the set-up form's fields and `create_campaign`'s flags."""
    found: dict[str, Option] = {}
    for protocol in PROTOCOLS.values():
        for option in protocol.options:
            first = found.setdefault(option.name, option)
            if option.type == STRINGS and first is not option:
                found[option.name] = replace(first, choices=tuple(dict.fromkeys(first.choices + option.choices)))
    return list(found.values())


def setup_hints() -> dict[str, dict]:
    """What the set-up page changes when a protocol is chosen: the scale a new criterion gets, and
    each option's default, bounds and help (the fields are shared by name across protocols)."""
    hints = {}
    for p in PROTOCOLS.values():
        scale = p.default_scale or p.form_scale
        hints[p.name] = {
            "scale": list(scale) if scale and p.has_scale else None,
            "options": {o.name: {"default": o.default if not isinstance(o.default, (list, dict)) or o.type == "strings"
                                 else None, "min": o.minimum, "max": o.maximum, "help": o.help, "label": o.label}
                        for o in p.options},
        }
    return hints


def choices() -> list[tuple[str, str]]:
    """(name, label) of every protocol, for forms."""
    return [(p.name, p.label) for p in PROTOCOLS.values()]
