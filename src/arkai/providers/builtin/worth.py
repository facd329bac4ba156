"""Is a unit worth citing? Rules for what a careful listener would *not* paste into notes.

A claim is a self-contained, checkable assertion, fact, number, definition, recommendation or
insight. The rules here reject the rest, each by a pattern that holds across talks rather than
a list of phrases from one: meta talk about the talk itself ("in this video we'll …", "let me
show you"), narration of on-screen steps without a takeaway ("let's print the list", "if we run
this"), talk addressed to the other speaker in an interview ("you mentioned …", "that's
awesome"), sponsor and subscribe talk, self-introductions of a host, praise without a figure
("an awesome human being"), icebreakers ("my biggest fear is …"), set-ups and audience
questions ("let's say you want …", "what if …", "anybody here …"), subordinate fragments
("Like we start every call."), hedges that carry no assertion ("I don't know", "I guess"),
rolling-caption restarts ("is very,is accurate", "to,to stream", "in, it was"), and the
colourful detail of a life story when it has no figure in it: re-enacted dialogue ("he was
like, hey …"), family and childhood, the speaker's tastes and fears, host remarks about the
community ("one of our first members"). In a conversation (``dialogue``), a sentence opening
"you're …" / "you were …" is a remark to the other speaker.

:func:`filler_reason` returns a short reason (for tests and diagnostics) or ``None``.
"""

from __future__ import annotations

import re

_META = re.compile(
    r"""
    \bin\ (?:this|today's|the\ next|the\ last|the\ previous|a\ later|a\ future)
        \ (?:video|episode|lesson|tutorial|talk|course|section|podcast|chapter|part|show)\b
    | \bthis\ (?:video|episode|podcast|show|lesson|tutorial|series)\ (?:is|was|will|features)\b
    | \b(?:today|now|next|first|in\ a\ (?:moment|minute|second|bit))
        ,?\ (?:we|i)(?:'re|\ are|'ll|\ will|'m|\ am)?\ (?:going\ to\ |gonna\ )?
        (?:look|talk|see|cover|learn|show|discuss|dive|start|walk|go\ over|take\ a\ look|
           explore|review|recap|answer)\b
    | \b(?:we|i)(?:'re|\ are|'m|\ am)\ (?:going\ to|gonna)
        \ (?:look|talk|see|cover|learn|show|discuss|dive|start|walk|go\ over|take\ a\ look|
           explore|review|recap|be\ talking|be\ looking|answer|ask|transition)\b
    | \b(?:we|i)'ll\ (?:look|talk|see|cover|learn|show|discuss|dive|start|walk|go\ over|get\ into|
        take\ a\ look|explore|review|recap|be\ talking|be\ looking|answer|ask)\b
    | \blet(?:'s|\ us)\ (?:take\ a\ look|look|talk|see|go\ ahead|get\ started|start|move\ on|
        dive|jump|begin|review|recap|continue|switch|transition|wrap|get\ into|get\ back)\b
    | \blet\ me\ (?:show|walk|explain|tell|start|ask|go|give|share|introduce|just|try|see|
        pull|bring|read|quickly|first|also|move)\b
    | \b(?:next|last|previous|following|upcoming)\ (?:video|episode|lesson|section|chapter)\b
    | \b(?:as|like)\ (?:i|we)(?:'ve|\ have)?\ (?:said|mentioned|discussed|saw|showed)\b
    | \b(?:the|another|one|my|our)\ (?:other\ |next\ |last\ |first\ |final\ )?
        question\ (?:we|i)\ (?:have|had|ask)\b
    | \b(?:i|we)\ (?:want|wanted|wanna|would\ like|'d\ like)\ (?:to\ )?(?:talk|transition|ask|
        make\ sure|start|share|thank|mention|introduce|go\ over|show|dive|jump|get\ into)\b
    | \bquestions?\ (?:from|for)\ (?:the|our|you|him|her)\b
    | \b(?:patreon|sponsor(?:s|ed|ing|ship)?|subscrib(?:e|ed|ing)|description\ below|
        links?\ (?:below|in\ the\ description)|(?:leave|drop)\ a\ comment|hit\ the\ (?:like|bell)|
        notification\ bell|smash\ that)\b
    | ^(?:i'm|i\ am|my\ name\ is|this\ is)\ [A-Z][a-z]+(?:\ [A-Z][a-z]+)?\ *(?:,|and\ |$)
    | \bwelcome\ (?:to|back|everyone|everybody)\b
    | \b(?:this|the|our|my)\ (?:podcast|episode|show|channel|video|livestream|stream)\b
    | \b(?:an?|today's|next|last|every|each)\ (?:\w+\ ){0,2}(?:episode|podcast)\b
    | \b(?:we|i|he|she|they)\ (?:talked|chatted|spoke|sat\ down)\ (?:a\ lot\ |a\ bit\ )?
        (?:with|to|about)\b
    | \btelling\ you\ (?:this|that|the|my)\ story\b
    | \b(?:hear|learn|talk)\ (?:from|with)\ [A-Z]
    | \b(?:is|are)\ (?:gonna|going\ to)\ (?:talk|share|tell|show|walk|join|be\ talking)\b
    | \bwill\ (?:share|talk|tell)\ (?:with\ )?us\b
    """,
    re.IGNORECASE | re.VERBOSE,
)

_NARRATION = re.compile(
    r"""
    \blet(?:'s|\ us)\ (?:now\ |also\ |just\ |quickly\ |first\ )?(?:print|run|add|type|call|
        create|define|declare|change|remove|delete|save|open|try|check|write|execute|pass|
        store|set|put|use|go\ back|import|click|select|scroll|zoom|make)\b
    | \b(?:i'm|i\ am|we're|we\ are)\ (?:going\ to|gonna)\ (?:type|click|run|print|delete|add|
        write|open|save|press|call|create|pass|scroll|select|use|change|put|go\ back)\b
    | \b(?:if|when|once)\ (?:we|i|you)\ (?:run|execute|print|save)\ (?:this|that|it|the|our)\b
    | \b(?:click|press|hit|tap)\ (?:on|the|enter|return|run|save)\b
    | \b(?:(?:i|we)\ (?:just|now)\ (?:typed|clicked|ran|printed|added|deleted|wrote))\b
    | \bover\ here\b
    | \bhere\ we\ (?:are|have|go)\b
    | \b(?:we|i)\ (?:will|'ll)\ (?:print|run|type|get|see\ the\ (?:result|output))\b
    | \b(?:you|we)\ (?:saw|just\ saw)\ (?:that|how|what)\b
    """,
    re.IGNORECASE | re.VERBOSE,
)

_ADDRESSED = re.compile(
    r"""
    \byou\ (?:mentioned|said|were\ talking|talked|were\ saying|told\ (?:us|me)|brought\ up|
        knocked|did\ a|shared|touched\ on|alluded)\b
    | \b(?:that's|that\ is|that\ was|it's|it\ was|this\ is)\ (?:so\ |really\ |just\ |super\ )?
        (?:awesome|amazing|great|cool|wonderful|fantastic|incredible|funny|interesting|
        fascinating|hilarious|exciting)\b
    | \bi\ (?:love|loved|like)\ (?:that|this|it|how\ you)\b
    | \b(?:your|you're\ a)\ (?:story|journey|background)\b
    | \b(?:one\ of\ our|helped\ us|(?:join|joined|joining)\ us|with\ us\ (?:today|here|now))\b
    """,
    re.IGNORECASE | re.VERBOSE,
)

_SETUP = re.compile(
    r"^(?:let's say|let us say|suppose|imagine|say) (?:you|we|i|that)\b|\bwhat if\b"
    r"|\b(?:anybody|anyone|everybody|who) here\b|\braise your hand|\b(?:anybody|anyone) who\b",
    re.IGNORECASE,
)

#: Praise and enthusiasm ("an all around awesome human being", "how weird").
_ENTHUSIASM = re.compile(
    r"\b(?:awesome|amazing|incredible|insane(?:ly)?|freaking|super cool|so cool|how weird|"
    r"crazy|hilarious|human being|cool)\b",
    re.IGNORECASE,
)
_DIGIT = re.compile(r"\d")

#: Icebreakers and check-in questions ("one of my biggest fears is hornets").
_SMALL_TALK = re.compile(
    r"\b(?:biggest|greatest|worst) fears?\b|\bcheck-?in question\b|\bice ?breaker\b"
    r"|\bfavou?rite (?:food|colou?r|movie|snack|animal|season|ice cream)\b",
    re.IGNORECASE,
)

#: A subordinate clause standing alone ("Like we start every meeting.").
_FRAGMENT = re.compile(
    r"^(?:like|because|cuz|cause|which|who|who's|whose|whom|whereas|although|as if|such as)\b",
    re.IGNORECASE,
)
#: A sentence that stops right after "and you", "or we" …: the rest was never said.
_CUT_SHORT = re.compile(r"\b(?:and|or|but) (?:you|i|we|they|he|she)[.!…]*$", re.IGNORECASE)

_HEDGE = re.compile(
    r"^(?:(?:and|so|but|yeah|um|uh|oh|well),?\s+)*(?:i\s+(?:don't|do\s+not)\s+know|i\s+guess|"
    r"i\s+feel\s+like|i\s+was\s+like|i\s+don't\s+remember|not\s+sure|who\s+knows|"
    r"i\s+have\s+no\s+idea|i\s+can't\s+remember)\b",
    re.IGNORECASE,
)
_FORGOT = re.compile(r"\b(?:i|we)\s+(?:can't|cannot|don't|do\s+not)\s+remember\b", re.IGNORECASE)

#: A restart left by rolling captions or a stutter: "is very,is accurate", "to,to stream",
#: "I, I", "it's,uh, it's".
_RESTART = re.compile(
    r"\b(?!(?:a|an|the)\b)(\w+)(?:,\s*|\s+\w+,\s*)(?:(?:uh|um),\s*)?\1\b|\b(\w+),(?:uh|um)?,?\s*\2\b"
    r"|^(?:i|it|we|they|he|she),\s+(?:(?:uh|um),\s+)?(?:i|it|we|they|he|she|there|you)\b"
    r"|^(?:it's|that's|there's)\s+(?:we|i|they|you)\b"
    r"|\b(?:in|at|on|to|for|of|with|from|by|the|a|an|is|are|was|were)\s*,\s+"
    r"(?:(?:uh|um),\s+)?(?:it|i|we|they|he|she)\b"
    r"|\b(?:the|a|an)\s+(?:not|every|my|your|our|another|a|an|the)\b"
    r"|\b((?:i|i'm|it|it's|we|we're|you|you're|they|they're|he|she|that|that's|there|there's|"
    r"this|is|was|and|but|so)\s+\w+(?:'\w+)?)\s+\3\b",
    re.IGNORECASE,
)


#: Reported speech and re-enacted dialogue ("Dan was like, Hey, …", "I said, okay").
_REPORTED = re.compile(
    r"\b(?:was|were|is|are|be|i'm|he's|she's|they're)\s+like"
    r"(?:,?\s+(?:hey|oh|okay|ok|wow|yeah|dude)|,\s+(?:well|no|what|man|i))\b"
    r"|\blike,\s+(?:hey|oh|wow)\b"
    r"|\b(?:said|says|asked|told\s+(?:me|us|him|her))\s*,?\s+(?:hey|oh|okay|ok|well|look|listen)\b",
    re.IGNORECASE,
)

#: Family, childhood and feelings: the colourful detail of a life story.
_PERSONAL = re.compile(
    r"\bmy\s+(?:kids?|children|wife|husband|partner|mom|mum|dad|mother|father|parents|family|"
    r"girlfriend|boyfriend|sister|brother|dog|cat)\b|\b(?:mom|mother|dad|father)\s+of\b"
    r"|\bwhen\s+i\s+was\s+(?:a\s+kid|younger|little|young|a\s+child|in\s+school|growing\s+up)\b"
    r"|\bas\s+a\s+kid\b|\bgrade\s+(?:one|two|three|four|five|six|seven|eight|nine|\d+)\b"
    r"|\b(?:i|we)\s+(?:cried|hated|loved|was\s+dating|was\s+scared|was\s+happy|was\s+excited|"
    r"was\s+so\s+excited)\b",
    re.IGNORECASE,
)


#: The speaker's own tastes and fears ("I'm not a big fan of heights", "I hated React").
_TASTE = re.compile(
    r"^(?:\w+,?\s+){0,3}?i(?:\s+am|'m)?\s+(?:(?:really|just|also|not|never|always|kind\s+of|"
    r"totally|so)\s+)*(?:(?:a\s+)?(?:big\s+|huge\s+)?fan\s+of|hate[ds]?|love[ds]?|"
    r"afraid\s+of|scared\s+of|terrified\s+of|obsessed\s+with)\b",
    re.IGNORECASE,
)

#: Words run together by a caption glitch ("@thetimelikemicrosoftisopensource…").
_GARBLED = re.compile(r"[A-Za-z@]{26,}")


#: In a conversation, a remark to the other speaker about them ("Now you're doing React
#: Native.", "You were on the panel.") — a generic "you" ("ideally you find a job …") is kept.
_TO_GUEST = re.compile(
    r"^(?:(?:and|so|now|but|well|oh|yeah|okay|right),?\s+)*you(?:'re|\s+are|'ve|\s+have|"
    r"\s+were|\s+did|\s+had|'d\s+been)\b"
    r"|\byou(?:'ve|\s+have|\s+had|\s+were|\s+did)\s+(?:\w+\s+)?(?:been|done|given|had|"
    r"written|made|said|mentioned|told|shared|worked|built|started|created|contributed|found|"
    r"mentored|talked)\b|\bi\s+(?:still\s+)?(?:see|saw)\s+you\b"
    r"|^you\s+(?:contributed|helped|wrote|started|created|built|joined|made|gave|reached)\b",
    re.IGNORECASE,
)

#: A sentence opening with a verb and no subject ("Are interested, but haven't contributed.").
_NO_SUBJECT = re.compile(
    r"^(?:are|is|was|were|has|have|had|am)\s+"
    r"(?!(?:you|we|they|i|he|she|it|there|these|those|this|that|the|a|an|all|some|any)\b)",
    re.IGNORECASE,
)


def filler_reason(text: str, *, dialogue: bool = False) -> str | None:
    """Why ``text`` (a cleaned unit) is not worth citing, or ``None`` when no rule objects.
    ``dialogue``: the text is a turn of a conversation between labelled speakers, where a
    sentence about "you" is addressed to the other speaker."""
    if dialogue and _TO_GUEST.search(text):
        return "conversation"
    if _META.search(text):
        return "meta"
    if _NARRATION.search(text):
        return "narration"
    if _ADDRESSED.search(text):
        return "conversation"
    if _ENTHUSIASM.search(text) and not _DIGIT.search(text):
        return "enthusiasm"
    if _SMALL_TALK.search(text):
        return "small talk"
    if _SETUP.search(text):
        return "setup"
    if (_FRAGMENT.match(text) and len(text.split()) < 12) or _CUT_SHORT.search(text):
        return "fragment"
    if _NO_SUBJECT.match(text) and not text.rstrip().endswith("?"):
        return "fragment"
    if _GARBLED.search(text):
        return "garbled"
    if _TASTE.match(text) and not _DIGIT.search(text):
        return "taste"
    if _REPORTED.search(text):
        return "reported speech"
    if _PERSONAL.search(text) and not _DIGIT.search(text):
        return "personal"
    if _HEDGE.match(text) or _FORGOT.search(text):
        return "hedge"
    if _RESTART.search(text):
        return "restart"
    return None


__all__ = ["filler_reason"]
