"""``arkai do "words"``: words → one arkai command, by three layers (seed 000, "Intent Routing:
3-Layer Brain"; docs/agents.md):

1. **reflex** — words holding http(s) URLs are an ``add`` of those URLs, each routed by the URL
   rules of ``arkai add`` (:func:`arkai.sources.route.route`: YouTube, podcast feeds, PDFs, the host
   that was learned before, else an article), with the tags the words name ("tag it ai");
2. **learned** — words that ran a command successfully before (normalised: lower case,
   whitespace collapsed) get that command again (``.arkai/routes.json``, ``"phrases"``);
3. **provider** — the ``route_intent`` pattern through the provider runner (``extract.provider``
   or the one given; the ``builtin`` provider is a small keyword grammar), whose answer must be
   an argv.

Every command, from whichever layer, is checked before it is shown: no shell syntax in the words
or the arguments, and the argv must parse with the CLI's own grammar (``validate``, given by the
CLI: click's parser of the real command, nothing invoked). A refusal is
:class:`IntentRefused` with the reason; nothing is run. Running is the caller's business, and
only a command that then succeeds is learned (:func:`learn`).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from arkai.adapters.events import utc_now
from arkai.adapters.repo import Repo
from arkai.core.intent import find_urls, normalise_phrase, shell_syntax, split_tags
from arkai.errors import InvalidInputError
from arkai.patterns import OutputError, get_pattern
from arkai.providers.runner import make_runner
from arkai.sources.route import ROUTES, learn_phrase, load_phrases, route

__all__ = ["LAYERS", "PATTERN", "IntentRefused", "Plan", "learn", "plan"]

PATTERN = "route_intent"
LAYERS = ("reflex", "learned", "provider")
MAX_WORDS_CHARS = 2000

Validator = Callable[[list[str]], object]
"""Raises :class:`InvalidInputError` when an argv is not a command of the CLI."""


class IntentRefused(InvalidInputError):
    """The words, or the command they became, cannot be run; nothing was."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(f"refused: {message}; nothing was run", hint=hint)


@dataclass(frozen=True)
class Plan:
    """The one command the words became, and which layer answered why."""

    words: str
    layer: str
    """``reflex`` | ``learned`` | ``provider``."""
    why: str
    argv: tuple[str, ...]
    provider: str | None = None

    @property
    def command(self) -> str:
        return "arkai " + shlex.join(self.argv)

    def to_dict(self) -> dict[str, Any]:
        return {**vars(self), "argv": list(self.argv), "command": self.command}


def _checked(argv: list[str], validate: Validator, source: str) -> tuple[str, ...]:
    if argv and argv[0] == "arkai":
        argv = argv[1:]
    if not argv:
        raise IntentRefused(f"{source} gave no command")
    for arg in argv:
        found = shell_syntax(arg)
        if found is not None or "\n" in arg or "\x00" in arg:
            raise IntentRefused(
                f"{source} gave an argument with shell syntax ({found or 'a line break'!r} in "
                f"{arg[:80]!r}); arkai do runs one arkai command, never a shell"
            )
    try:
        validate(list(argv))
    except InvalidInputError as exc:
        raise IntentRefused(f"{source} gave `{shlex.join(argv)[:200]}`: {exc.message}") from None
    return tuple(argv)


def _reflex(repo: Repo, words: str, urls: list[str], validate: Validator) -> Plan:
    _, tags = split_tags(words)
    reasons = []
    for url in urls:
        how = route(repo.root, url)
        reasons.append(f"{url}: {how.reason} ({how.layer})")
    argv = ["add", *urls] + (["--tags", ",".join(tags)] if tags else [])
    why = "the words hold a URL, so they add it — " + "; ".join(reasons)
    if tags:
        why += f"; tags {', '.join(tags)} from the words"
    return Plan(words, "reflex", why, _checked(argv, validate, "the URL rules"))


def _provider(repo: Repo, words: str, validate: Validator, name: str | None) -> Plan:
    params = repo.params
    if name:
        params = {**params, "extract": {**params["extract"], "provider": name, "model": None}}
    provider = str(params["extract"]["provider"])
    runner = make_runner(repo.root, params, refresh=False, now=utc_now())
    pattern = get_pattern(PATTERN, repo.root)
    try:
        value = runner.run(pattern, words, {}).value
    except OutputError as exc:
        raise IntentRefused(f"the {provider} provider's answer is not a command ({exc})") from None
    argv, why = value.get("command") or [], str(value.get("why") or "")
    if not argv:
        raise IntentRefused(
            f"the {provider} provider found no arkai command for these words"
            + (f" ({why[:200]})" if why else ""),
            hint="say it with a verb: search …, ask …, add URL, show ID, validate, status",
        )
    argv = _checked([str(a) for a in argv], validate, f"the {provider} provider")
    return Plan(words, "provider", f"the {provider} provider: {why[:300]}", argv, provider)


def plan(repo: Repo, words: str, *, validate: Validator, provider: str | None = None) -> Plan:
    """The command ``words`` ask for (see the module doc). Raises :class:`IntentRefused` when
    there is none that may run; provider failures (network, circuit) propagate as they are."""
    words = " ".join(words.split())
    if not words:
        raise InvalidInputError('say what to do: arkai do "search bee sensors"')
    if len(words) > MAX_WORDS_CHARS:
        raise IntentRefused(f"the words are longer than {MAX_WORDS_CHARS} characters")
    found = shell_syntax(words)
    if found is not None:
        raise IntentRefused(
            f"the words hold shell syntax ({found!r}); arkai do runs one arkai command, never "
            "a shell"
        )
    urls = find_urls(words)
    if urls:
        return _reflex(repo, words, urls, validate)
    learned = load_phrases(repo.root).get(normalise_phrase(words))
    if learned is not None:
        try:
            argv = _checked(learned, validate, f"the learned route in {ROUTES}")
        except IntentRefused as exc:
            raise IntentRefused(
                exc.message.removeprefix("refused: ").removesuffix("; nothing was run"),
                hint=f"remove that phrase from {ROUTES}",
            ) from None
        why = f"these words ran `{shlex.join(argv)[:200]}` successfully before ({ROUTES})"
        return Plan(words, "learned", why, argv)
    return _provider(repo, words, validate, provider)


def learn(repo: Repo, done: Plan) -> bool:
    """After ``done`` ran successfully: remember the words → command (layer 2) when a provider
    answered them; True when ``.arkai/routes.json`` changed."""
    if done.layer != "provider":
        return False
    return learn_phrase(repo.root, normalise_phrase(done.words), list(done.argv))
