"""Template filters: sanitised Markdown for campaign instructions, protocol labels."""

import nh3
from django import template
from django.utils.safestring import mark_safe
from markdown_it import MarkdownIt

from annotations import protocols

register = template.Library()

# CommonMark without raw HTML; nh3 then keeps only harmless tags and attributes
# (links get rel="noopener noreferrer"; no scripts, styles or event handlers).
_MARKDOWN = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table").enable("strikethrough")
_TAGS = {
    "p",
    "br",
    "em",
    "strong",
    "del",
    "code",
    "pre",
    "blockquote",
    "ul",
    "ol",
    "li",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "a",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
}


def markdown_html(text: str) -> str:
    html = _MARKDOWN.render(text or "")
    return nh3.clean(
        html,
        tags=_TAGS,
        attributes={"a": {"href", "title"}, "th": {"align"}, "td": {"align"}},
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer",
    )


@register.filter(name="markdown")
def markdown_filter(text: str) -> str:
    return mark_safe(markdown_html(text))  # sanitised by nh3 above


@register.filter(name="protocol_label")
def protocol_label(name: str) -> str:
    """A campaign's protocol as the registry labels it (`{{ campaign.protocol|protocol_label }}`)."""
    return protocols.label(name)
