"""A section of the HTML report (:class:`HtmlSection`): what it reads from its output folder, and the
template that renders it. The report looks a protocol folder's section up by its manifest's
``protocol`` among the sections it is given (``workers.protocols.html_sections()``: each protocol
declares its own; this package names no protocol), and a check's (``validate``, ``validate --human``) by its manifest's
``kind`` in :data:`CHECKS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["HtmlSection", "CHECKS"]


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


def _checks() -> dict[str, HtmlSection]:
    from rubric.validity import HUMAN_KIND, VALIDATE_KIND, read_agreement, read_validity

    return {VALIDATE_KIND: HtmlSection(read_validity, "section_validity.html.j2"),
            HUMAN_KIND: HtmlSection(read_agreement, "section_agreement.html.j2")}


#: manifest ``kind`` -> the section of a check's output folder (``lfqa-rubric validate``'s).
CHECKS: dict[str, HtmlSection] = _checks()
