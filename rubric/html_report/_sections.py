"""A protocol's section of the HTML report (:class:`HtmlSection`): what it reads from its output folder,
and the template that renders it. The report looks a folder's section up by its manifest's
``protocol`` among the sections it is given (``workers.protocols.html_sections()``: each protocol
declares its own); this package names no protocol.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["HtmlSection"]


@dataclass(frozen=True)
class HtmlSection:
    """One protocol's part of the page.

    Attributes:
        read: ``read(folder, *, n_boot, seed) -> data``: the numbers its ``report.md`` shows, computed
            with the same functions (an InputError leaves the folder out, with a note).
        template: a template of this package's ``templates`` folder that renders ``x`` (the data) and
            ``folder``; or, with ``source``, the name ``source`` is known by.
        source: the template's jinja text (a protocol from another package); it may import this
            package's macros (``{% from "macros.html.j2" import chart, few, three %}``).
    """

    read: Callable[..., Any]
    template: str
    source: str | None = None
