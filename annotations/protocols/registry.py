"""The protocols by name: the only place that lists them."""
from __future__ import annotations

from annotations.protocols.base import Protocol
from annotations.protocols.bws import BestWorst
from annotations.protocols.cesa import Cesa
from annotations.protocols.esa import Esa
from annotations.protocols.likert import Likert
from annotations.protocols.mqm import Mqm
from annotations.protocols.pairwise import Pairwise
from annotations.protocols.post_edit import PostEdit
from annotations.protocols.rankme import RankMe

PROTOCOLS: dict[str, Protocol] = {}


def register(protocol: Protocol) -> Protocol:
    if protocol.name in PROTOCOLS:
        raise ValueError(f"protocol {protocol.name!r} is registered twice")
    PROTOCOLS[protocol.name] = protocol
    return protocol


for _cls in (Likert, RankMe, Pairwise, BestWorst, Esa, Cesa, Mqm, PostEdit):
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


def choices() -> list[tuple[str, str]]:
    """(name, label) of every protocol, for forms."""
    return [(p.name, p.label) for p in PROTOCOLS.values()]
