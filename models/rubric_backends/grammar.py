"""Grammar scorers: Harper (offline, in-process, the default) and LanguageTool (the paper's tool).

Both count the findings that ``rubric.scoring.grammar`` says are grammar errors and turn the count into
the paper's 1-5 score with ``rubric.scoring.grammar.grammar_score``.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import shutil
import threading
import urllib.parse
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from typing import Any, Protocol

from models.rubric_backends.language import abstain_if_not_english
from models.rubric_backends.single_spec import SingleSpecScorer
from rubric.config import check_range
from rubric.errors import BackendUnavailableError, ConfigError, EngineError, UnknownNameError
from rubric.scoring import count_harper_lints, count_languagetool_matches, grammar_score
from rubric.io import AnswerItem
from rubric.scoring import Provenance, Score, ScoreSet
from rubric.scoring import RubricSpec

__all__ = ["HarperGrammarScorer", "LanguageToolGrammarScorer", "HARPER_VERSION", "LANGUAGETOOL_VERSION",
           "HARPER_LANGUAGE", "LANGUAGETOOL_URL_ENV", "harper_linter", "HarperPass", "LintReader", "harper_pass",
           "local_languagetool_version"]

log = logging.getLogger(__name__)

HARPER_VERSION = "grammar.harper.v1"
LANGUAGETOOL_VERSION = "grammar.languagetool.v1"

#: Harper parses its input as this markup. Plain text, because LanguageTool (the tool the
#: paper used) checks the raw answer too; Markdown mode would skip code spans and blocks.
HARPER_LANGUAGE = "plaintext"

#: Environment variable naming a LanguageTool server when no ``url`` is given.
LANGUAGETOOL_URL_ENV = "LANGUAGETOOL_URL"

_LT_OPTIONS = (
    "Options: run a LanguageTool server (e.g. `docker run -p 8010:8010 erikvl87/languagetool`) and pass "
    f"its URL (ScoringConfig.languagetool_url or ${LANGUAGETOOL_URL_ENV}); or install Java >= 17 and the "
    "LanguageTool jars (language_tool_python downloads them into ~/.cache/language_tool_python, or point "
    "$LTP_JAR_DIR_PATH at an unpacked LanguageTool); or use the offline grammar.harper.v1 instead."
)


class SharedLinter:
    """One ``harper.Linter`` used under a lock: a Linter is not thread-safe, and building one loads
    Harper's dictionary (seconds), so a process builds one (:func:`harper_linter`) and shares it."""

    def __init__(self) -> None:
        try:
            from harper import Linter
        except ImportError as e:
            raise BackendUnavailableError(
                "harper-py is not installed; install the [cpu] extra (pip install 'lfqa-rubric[cpu]') "
                "or pip install 'harper-py==0.2.0'") from e
        self._linter = Linter()
        self._lock = threading.Lock()

    def lint(self, text: str, *, language: str = HARPER_LANGUAGE) -> list[Any]:
        with self._lock:
            return self._linter.lint(text, language=language)

    def forget(self) -> None:
        """A fresh Harper linter: a Linter keeps what it has linted (the same text again came back ~6x faster,
        1.2 against 7.5 ms on TREC-DL-NF passages), so a benchmark that lints a text twice starts cold."""
        from harper import Linter

        with self._lock:
            self._linter = Linter()


@functools.cache
def harper_linter() -> SharedLinter:
    """The process's Harper linter, built on first use.

    Raises:
        BackendUnavailableError: harper-py is not installed.
    """
    return SharedLinter()


def _ok(n_errors: int, text: str, **extras: Any) -> Score:
    return Score.ok(grammar_score(n_errors, text), n_errors=n_errors, n_words=len(text.split()), **extras)


class LintReader(Protocol):
    """A scorer whose one rubric is read off Harper's lints of the answer (grammar, fluency)."""

    specs: tuple[RubricSpec, ...]

    def provenance(self, rubric: str) -> Provenance: ...

    def precheck(self, item: AnswerItem) -> Score | None:
        """The item's score without linting (a text it refuses to read), or None to read the lints."""

    def read_lints(self, item: AnswerItem, lints: list[Any]) -> Score:
        """The item's score from Harper's lints of its answer; may raise (the row then fails)."""


class HarperPass:
    """Several lint readers (``grammar.harper.v1`` and ``fluency.harper.*``) served from one Harper lint per
    answer: Harper is the most expensive step of both, and each reader's scores are exactly what it gives alone
    (alone, a reader's ``score_batch`` is a pass of its own).

    Args:
        readers: the lint readers, each serving its own rubrics (no rubric name twice).

    Raises:
        ConfigError: a rubric name served twice.
    """

    def __init__(self, readers: Sequence[LintReader]) -> None:
        self.readers = list(readers)
        self.specs: tuple[RubricSpec, ...] = tuple(s for r in self.readers for s in r.specs)
        names = [s.name for s in self.specs]
        if len(set(names)) != len(names):
            raise ConfigError(f"HarperPass: a rubric served twice in {names}")
        self._linter = harper_linter()

    def provenance(self, rubric: str) -> Provenance:
        for r in self.readers:
            if any(s.name == rubric for s in r.specs):
                return r.provenance(rubric)
        raise UnknownNameError(f"HarperPass has no rubric {rubric!r}; it serves {', '.join(s.name for s in self.specs)}")

    def score_batch(self, items: Sequence[AnswerItem]) -> list[ScoreSet]:
        """One ``{rubric: Score}`` per item, in order; a text Harper fails on gets ``Score.failed`` for the
        readers that needed its lints."""
        out: list[ScoreSet] = []
        for it in items:
            pre = [r.precheck(it) for r in self.readers]
            lints: list[Any] | None = None
            error = ""
            if any(p is None for p in pre):
                try:
                    lints = self._linter.lint(it.answer, language=HARPER_LANGUAGE)
                except Exception as e:  # noqa: BLE001 - recorded on the row, the batch goes on
                    error = f"harper failed: {type(e).__name__}: {e}"
            row: dict[str, Score] = {}
            for r, p in zip(self.readers, pre):
                if p is None and lints is None:
                    p = Score.failed(error)
                elif p is None:
                    try:
                        p = r.read_lints(it, lints)
                    except Exception as e:  # noqa: BLE001 - recorded on the row, the batch goes on
                        p = Score.failed(f"harper failed: {type(e).__name__}: {e}")
                row[r.specs[0].name] = p
            out.append(row)
        return out


def harper_pass(readers: Sequence[LintReader]) -> list[LintReader | HarperPass]:
    """``readers`` with every lint reader among them served by one :class:`HarperPass` (in the first one's
    place); a single reader is left as it is."""
    lint = [r for r in readers if hasattr(r, "read_lints") and hasattr(r, "precheck")]
    if len(lint) < 2:
        return list(readers)
    out: list[Any] = []
    for r in readers:
        if r is lint[0]:
            out.append(HarperPass(lint))
        elif r not in lint:
            out.append(r)
    return out


class HarperGrammarScorer(SingleSpecScorer):
    """``grammar.harper.v1``: Harper lints of the kinds in ``HARPER_COUNTED_KINDS``, scored 1-5.

    The process's one linter (:func:`harper_linter`) lints the texts one after another. Harper has
    no batch API: one ``lint`` call per answer is all there is, so batching buys nothing here. Beside
    fluency, one :class:`HarperPass` lints each answer once for both (``models.backends.build_scorers``).

    Args:
        specs: exactly ``(RUBRICS.get("grammar.harper.v1"),)``.

    Raises:
        ConfigError: wrong specs.
        BackendUnavailableError: harper-py is not installed.
    """

    def __init__(self, specs: tuple[RubricSpec, ...]) -> None:
        self._serve(specs, HARPER_VERSION)
        self._linter = harper_linter()
        self._revision = metadata.version("harper-py")

    def provenance(self, rubric: str) -> Provenance:
        return self._provenance(rubric, backend="harper", model_id="harper-py", model_revision=self._revision)

    def count_errors(self, text: str) -> tuple[int, int]:
        """``(grammar errors, all lints)`` Harper finds in ``text``."""
        lints = self._linter.lint(text, language=HARPER_LANGUAGE)
        return count_harper_lints(lint.lint_kind for lint in lints), len(lints)

    def precheck(self, item: AnswerItem) -> Score | None:
        # an answer in another language abstains (Harper reads English only: it finds no error there); every other
        # answer is linted, and one Harper cannot read fails with Harper's reason
        return abstain_if_not_english(item.answer)

    def read_lints(self, item: AnswerItem, lints: list[Any]) -> Score:
        return _ok(count_harper_lints(lint.lint_kind for lint in lints), item.answer, n_lints=len(lints))

    def score_batch(self, items: Sequence[AnswerItem]) -> list[ScoreSet]:
        """One ``{"grammar": Score}`` per item, in order; a text Harper fails on gets ``Score.failed``."""
        return HarperPass([self]).score_batch(items)


class LanguageToolGrammarScorer(SingleSpecScorer):
    """``grammar.languagetool.v1``: LanguageTool matches of issue type "grammar", scored 1-5.

    With ``url`` (or ``$LANGUAGETOOL_URL``) it talks to that LanguageTool server; without, it
    starts a local one through language_tool_python, which needs Java and the LanguageTool jars
    already on disk (this class never triggers the 259 MB download). Up to ``threads`` checks
    run at once: each check is one HTTP request, so threads overlap the server's work.

    Args:
        specs: exactly ``(RUBRICS.get("grammar.languagetool.v1"),)``.
        url: a LanguageTool server, e.g. ``http://localhost:8010``.
        threads: the most concurrent checks.
        language: LanguageTool language code.

    Raises:
        ConfigError: wrong specs or ``threads < 1``.
        BackendUnavailableError: language_tool_python, Java or the jars are missing, or the
            server cannot be reached; the message lists the options.
    """

    def __init__(self, specs: tuple[RubricSpec, ...], *, url: str | None = None, threads: int = 2,
                 language: str = "en-US") -> None:
        self._serve(specs, LANGUAGETOOL_VERSION)
        check_range("threads", threads, low=1)
        self.threads = threads
        self.language = language
        self.url = url or os.environ.get(LANGUAGETOOL_URL_ENV) or None
        try:
            import language_tool_python
            from language_tool_python.exceptions import LanguageToolError
        except ImportError as e:
            raise BackendUnavailableError(
                "language_tool_python is not installed; install the [cpu] extra "
                "(pip install 'lfqa-rubric[cpu]'). " + _LT_OPTIONS) from e
        self._lt_error: type[Exception] = LanguageToolError
        if self.url:
            try:
                self._tool = language_tool_python.LanguageTool(language, remote_server=self.url)
            except (LanguageToolError, OSError, ValueError) as e:
                raise BackendUnavailableError(
                    f"LanguageTool server at {self.url} is not usable: {type(e).__name__}: {e}. {_LT_OPTIONS}") from e
            self._revision = _remote_version(self.url, language)
        else:
            version = local_languagetool_version()
            try:
                self._tool = language_tool_python.LanguageTool(language, language_tool_download_version=version)
            except (LanguageToolError, OSError, ValueError) as e:
                raise BackendUnavailableError(
                    f"a local LanguageTool {version} could not start: {type(e).__name__}: {e}. {_LT_OPTIONS}") from e
            self._revision = version

    def provenance(self, rubric: str) -> Provenance:
        return self._provenance(rubric, backend="languagetool", model_id="LanguageTool", model_revision=self._revision)

    def close(self) -> None:
        """Stop the local LanguageTool server, if this scorer started one."""
        self._tool.close()

    def _score_one(self, text: str) -> Score:
        from language_tool_python.exceptions import RateLimitError
        from requests.exceptions import ConnectionError as Unreachable

        try:
            matches = self._tool.check(text)
        except RateLimitError as e:
            raise EngineError(f"LanguageTool rate limit at {self.url}: {e}") from e
        except self._lt_error as e:
            # only a server that cannot be reached (refused, reset, no such host) stops the job; one that answers
            # this text with an error (HTTP 500 and a Java trace, not JSON) or too slowly fails this row: a failed
            # cell under --max-failed, scored again by --retry-failed
            if isinstance(e.__cause__, Unreachable):
                raise EngineError(f"LanguageTool server at {self.url or 'localhost'} cannot be reached: "
                                  f"{_first_line(e)}") from e
            return Score.failed(f"languagetool failed: the server answered no result for this text: {_first_line(e)}")
        return _ok(count_languagetool_matches(matches), text, n_matches=len(matches))

    def score_batch(self, items: Sequence[AnswerItem]) -> list[ScoreSet]:
        """One ``{"grammar": Score}`` per item, in order.

        Raises:
            EngineError: the server went away or rate-limited us (a dead engine re-raises).
        """
        with ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix="languagetool") as pool:
            # map() yields in input order, whatever order the checks finish in.
            scores = list(pool.map(self._score_one, [it.answer for it in items]))
        return self._score_sets(scores)


def _first_line(e: BaseException, limit: int = 200) -> str:
    """An exception's message, its first non-blank line cut at ``limit`` characters (a server's error page or Java
    trace is the message of language_tool_python's error)."""
    line = next((ln.strip() for ln in str(e).splitlines() if ln.strip()), type(e).__name__)
    return line if len(line) <= limit else line[:limit] + "..."


def local_languagetool_version() -> str:
    """The LanguageTool version a local server would run, or an actionable error if it cannot."""
    if shutil.which("java") is None:
        raise BackendUnavailableError("LanguageTool needs Java (>= 17), and `java` is not on PATH. " + _LT_OPTIONS)
    from language_tool_python.download_lt import LTP_DOWNLOAD_VERSION, LocalLanguageTool
    from language_tool_python.utils import LTP_JAR_DIR_PATH_ENV_VAR, get_language_tool_download_path

    if os.environ.get(LTP_JAR_DIR_PATH_ENV_VAR):
        return LTP_DOWNLOAD_VERSION
    installed = LocalLanguageTool.get_installed_versions()
    if not installed:
        raise BackendUnavailableError(
            f"no LanguageTool jars in {get_language_tool_download_path()} and ${LTP_JAR_DIR_PATH_ENV_VAR} is unset; "
            "they are not downloaded automatically here (259 MB). " + _LT_OPTIONS)
    return max(installed).version_name


def _remote_version(url: str, language: str) -> str:
    """The server's LanguageTool version from one tiny check (best effort: "" if it says nothing)."""
    from language_tool_python.utils import parse_url

    # The same URL arithmetic language_tool_python applies to remote_server.
    endpoint = urllib.parse.urljoin(urllib.parse.urljoin(parse_url(url), "v2/"), "check")
    body = urllib.parse.urlencode({"text": "Hello.", "language": language}).encode()
    try:
        with urllib.request.urlopen(endpoint, data=body, timeout=30) as resp:  # noqa: S310 - user-given server
            return str(json.load(resp).get("software", {}).get("version", ""))
    except (OSError, ValueError) as e:
        log.warning("could not read the LanguageTool version from %s: %s", endpoint, e)
        return ""
