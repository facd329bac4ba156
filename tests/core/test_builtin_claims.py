"""Claims worth citing: the filler rules, the content-driven count, the linear TextRank graph."""

from __future__ import annotations

import json

import numpy as np
import pytest

from arkai.providers.base import Request
from arkai.providers.builtin import BuiltinProvider
from arkai.providers.builtin import claims as claims_mod
from arkai.providers.builtin.standalone import standalone
from arkai.providers.builtin.worth import filler_reason


def call(pattern: str, text: str, **variables: object) -> list[dict[str, object]]:
    request = Request(pattern, "", text, options={"variables": variables})
    value: list[dict[str, object]] = json.loads(
        BuiltinProvider().complete(request, timeout=60).text
    )
    return value


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("In this video we'll look at how lists work in Python.", "meta"),
        ("Today we're going to talk about neural networks and layers.", "meta"),
        ("Let me show you how the compiler handles this case.", "meta"),
        ("We start every episode of the podcast with a question.", "meta"),
        ("If you enjoyed it, subscribe to the channel for more videos.", "meta"),
        ("I'm Bekah, and this is a podcast about developers.", "meta"),
        ("Let's print letters of zero to see the first item.", "narration"),
        ("If we run this program the list is printed again.", "narration"),
        ("You mentioned working on open source during the pandemic.", "conversation"),
        ("That's awesome, the whole team must have loved the launch.", "conversation"),
        ("I don't know, the framework felt slower than the old one.", "hedge"),
        ("Let's say you want to have a list of numbers up to 20.", "setup"),
        ("Anybody here sell Cutco knives in the summer after school?", "setup"),
        ("Like we start every Virtual Coffee call.", "fragment"),
        ("So active server pages and you.", "fragment"),
        ("I'm a developer from Ohio and one of my biggest fears is hornets.", "small talk"),
        ("It's we don't have like a grade 12 or a grade 13 there.", "restart"),
        ("Just some background and then we'll get into some stories", "meta"),
        ("It sold in 20 minutes, anybody who sold a company knows", "setup"),
        ("These are some of the cool things I learned from founders", "enthusiasm"),
        ("Today we have a really great episode for everyone.", "meta"),
        ("I, It was, I'd never contributed to open source at all.", "restart"),
        ("He's a mentor, a maintainer and an all around awesome human being.", "enthusiasm"),
        ("So Nick is gonna talk about live streaming and open source.", "meta"),
        ("So here we are unpacking the items list into three variables.", "narration"),
        ("My dream about taking an exam and my alarm going off is very,is accurate.", "restart"),
        ("It's been hard to,to stream from the new apartment lately.", "restart"),
        ("Then my manager was like, hey, we are shutting the office down.", "reported speech"),
        ("I remember when I was a kid we drove to the coast every summer.", "personal"),
        ("My kids are small, so evening meetups are hard to get to.", "personal"),
        ("I'm not a big fan of flying over the ocean at night.", "taste"),
        ("Honestly I really hated Java when I was doing it at school.", "taste"),
        ("At that time thecompanyhadnoideawhatopensourcewas at all.", "garbled"),
        ("She is also one of our earliest members and helps with the newsletter.", "conversation"),
        ("I got into open source in, it was maybe 2015 or so.", "restart"),
        ("The compiler is, uh, I started using it after the migration.", "restart"),
        ("We talked with the founder about pricing and early growth.", "meta"),
        ("Are curious about open source but have never contributed.", "fragment"),
        ("The other question we have is what the most exciting bug was.", "meta"),
        ("Like I've mentioned to you before, I'm slow at starting projects.", "meta"),
        ("Who's in our community, and a maintainer as well.", "fragment"),
        ("A lot of people are like, I have no idea who that is.", "reported speech"),
        ("She talked a lot about bootcamps and the ups and downs of learning.", "meta"),
        ("And why I'm telling you this story is that the forum led me here.", "meta"),
        ("I also fixed one or two issues for the site, I can't remember.", "hedge"),
        ("sometimes it's a it's a company that needs a new round", "restart"),
        ("then my cofounder said hey maybe we should raise a seed round", "reported speech"),
        ("Not having a another developer to lean on slowed the team down.", "restart"),
    ],
)
def test_filler_reason_rejects_talk_not_worth_citing(text: str, reason: str) -> None:
    assert filler_reason(text) == reason


@pytest.mark.parametrize(
    "text",
    [
        "A neuron holds a number between 0 and 1, called its activation.",
        "Slicing a list returns a new list and leaves the original unchanged.",
        "Pre-emptive term sheets usually end badly for founders.",
        "The network has about 13,000 weights and biases in total.",
        "The 0th element, the 1st element and the 2nd element are kept.",
        "Figuring out what you do not want to do narrows a career down.",
    ],
)
def test_filler_reason_keeps_claims(text: str) -> None:
    assert filler_reason(text) is None
    assert filler_reason(text, dialogue=True) is None


@pytest.mark.parametrize(
    "text",
    [
        "He's a big fan of TypeScript, React and Node.",
        "Ideally you find a job you enjoy, and that keeps burnout away.",
        "I sold $20,000 worth of knives in one summer.",
        "Kubernetes is, in short, a scheduler for containers.",
        "About two thirds of my career has been in the .NET ecosystem.",
        "A list of lists is a matrix, a list of lists of lists a cube.",
        "Rust is like no other language in how its borrow checker works.",
        "A tuple is like what you get from a list, but read-only.",
    ],
)
def test_new_rules_keep_claims(text: str) -> None:
    assert filler_reason(text) is None
    assert filler_reason(text, dialogue=True) is None


@pytest.mark.parametrize(
    "text",
    [
        "Now you're doing a lot of mobile work with React Native.",
        "You were on the conference panel about accessibility last year.",
        "We had two lightning talk events, and you've given talks at both of them.",
        "I still see you helping out with the newsletter every month.",
        "You contributed to my open source project last October.",
    ],
)
def test_remarks_to_the_other_speaker_are_filler_only_in_a_conversation(text: str) -> None:
    assert filler_reason(text) is None  # in a lecture "you" is the audience: may be a claim
    assert filler_reason(text, dialogue=True) == "conversation"


def test_a_podcast_keeps_career_facts_and_drops_life_story() -> None:
    turns = [
        ("Host", "Our guest today is Ana Ruiz, a staff engineer at Northwind Labs."),
        ("Host", "She leads the payments platform team of twelve engineers there."),
        ("Ana Ruiz", "I remember when I was a kid I took apart every radio in the house."),
        ("Ana Ruiz", "My first real programming job was in 2009, at a bank in Madrid."),
        ("Ana Ruiz", "Then my boss was like, hey, can you fix the payroll scripts?"),
        ("Ana Ruiz", "And I just started learning Perl and SQL through those scripts."),
        ("Ana Ruiz", "Payment systems fail at the edges, so we test every currency rounding."),
        ("Host", "Now you're doing a lot of the hiring for the platform team."),
        ("Ana Ruiz", "I'm not a big fan of whiteboard interviews for senior engineers."),
        ("Ana Ruiz", "Pairing on a real bug tells you far more than a whiteboard puzzle."),
    ]
    text = "".join(f"[00:00:{2 * i:02d}] {who}: {line}\n" for i, (who, line) in enumerate(turns))
    quotes = {c["quote"] for c in call("extract_claims", text)}
    life_story = {turns[i][1] for i in (2, 4, 7, 8)}  # childhood, dialogue, to the guest, taste
    assert not quotes & life_story, quotes & life_story
    facts = {turns[i][1] for i in (1, 3, 6, 9)}
    assert len(quotes & facts) >= 3, quotes


def test_claims_skip_meta_narration_and_restarts() -> None:
    lines = [
        "In this video we'll look at how the scheduler assigns work to every core.",
        "The scheduler assigns each task to the core with the shortest run queue.",
        "Let's print the queue lengths and run the program again to compare them.",
        "A task that waits longer than 40 milliseconds is moved to an idle core.",
        "My guess about the queue and the idle core is very,is accurate here.",
        "Work stealing keeps every core busy when the queues are uneven in length.",
        "Don't forget to subscribe to the channel for more videos on the scheduler.",
    ]
    out = call("extract_claims", "\n\n".join(lines) + "\n")
    quotes = {c["quote"] for c in out}
    assert quotes <= {lines[1], lines[3], lines[5]}, quotes
    assert quotes


def test_local_similarity_is_the_full_graph_within_the_window() -> None:
    from sklearn.feature_extraction.text import TfidfVectorizer

    docs = [f"sensor {i % 7} hive {i % 5} weight {i % 3} winter" for i in range(40)]
    matrix = TfidfVectorizer().fit_transform(docs).tocsr()
    full = (matrix @ matrix.T).toarray()
    np.fill_diagonal(full, 0.0)
    local = claims_mod.local_similarity(matrix, window=6).toarray()
    idx = np.arange(40)
    near = np.abs(idx[:, None] - idx[None, :]) <= 6
    assert np.allclose(local[near], full[near])
    assert not local[~near].any()
    assert np.allclose(claims_mod.local_similarity(matrix, window=64).toarray(), full)


@pytest.mark.parametrize(
    ("cleaned", "previous", "speaker", "expected"),
    [
        (
            "He's a big fan of TypeScript, uh, React and Node.",
            "Nick is a senior software engineer at Forem.",
            None,
            "Nick is a big fan of TypeScript, React and Node.",
        ),
        (
            "It stores compiled outputs keyed by input hashes.",
            "The build cache is shared by every machine.",
            None,
            "The build cache stores compiled outputs keyed by input hashes.",
        ),
        (
            "It stores compiled outputs keyed by input hashes.",
            "Yesterday we argued about caches for an hour.",
            None,
            "It stores compiled outputs keyed by input hashes.",  # nothing named: left alone
        ),
        (
            "I've been in the space for, you know, about 18 years now.",
            None,
            "Nick Taylor",
            "Nick Taylor says: I've been in the space for about 18 years now.",
        ),
        (
            "I am still learning so much,uh,constantly learning DevOps things.",
            None,
            None,
            "I am still learning so much constantly learning DevOps things.",
        ),
        (
            "I, I find the documentation the hardest part to keep current.",
            None,
            None,
            "I find the documentation the hardest part to keep current.",
        ),
    ],
)
def test_standalone_claim_text(
    cleaned: str, previous: str | None, speaker: str | None, expected: str
) -> None:
    assert standalone(cleaned, previous, speaker) == expected


@pytest.mark.parametrize(
    ("cleaned", "previous", "expected"),
    [
        # a contraction is spelt out with the referent ("'s been" is "has been")
        (
            "He's been coding since 2002.",
            ["Nick is an engineer at Forem."],
            "Nick has been coding since 2002.",
        ),
        # what "there was something called X" introduces
        (
            "It's kind of like PHP for Windows servers.",
            ["Even before .NET, there was something called ASP."],
            "ASP is kind of like PHP for Windows servers.",
        ),
        # a plural noun phrase, with its prepositional tail, for "they"
        (
            "They hold a number between 0 and 1.",
            ["The neurons in the first layer are pixels."],
            "The neurons in the first layer hold a number between 0 and 1.",
        ),
        (
            "They're called weights and biases.",
            ["The connections are just numbers."],
            "The connections are called weights and biases.",
        ),
        (
            "They hold grayscale values.",
            ["Neurons in the input layer hold pixels."],
            "Neurons in the input layer hold grayscale values.",
        ),
        # a known product or a name no person has is a thing: "it"
        (
            "It was released in 2015 by Facebook.",
            ["React Native is a mobile framework."],
            "React Native was released in 2015 by Facebook.",
        ),
        (
            "It returns a new list.",
            ["Python is a language for scripting."],
            "Python returns a new list.",
        ),
        # an organisation is "it" and "they"
        (
            "They even had their own scripting language.",
            ["Microsoft is a large company."],
            "Microsoft even had their own scripting language.",
        ),
        # a discourse adverb before the subject
        (
            "It's an absurdly complicated function.",
            ["Really the entire network is just a function."],
            "The entire network is an absurdly complicated function.",
        ),
        # "He" reaches past a sentence that names no one …
        (
            "He's a big fan of React and Node.",
            ["The company behind DEV.", "Nick is a senior engineer at Forem."],
            "Nick is a big fan of React and Node.",
        ),
        # … but not past one that names someone else
        (
            "He's a big fan of React and Node.",
            ["Together with Ben Halpern and the team.", "Nick is a senior engineer at Forem."],
            "He's a big fan of React and Node.",
        ),
        # nothing is guessed: agreement, dummy "it", demonstratives with their own noun
        ("It returns a new list.", ["Nick is a developer in Montreal."], "It returns a new list."),
        (
            "He founded it in 2009.",
            ["Python is a language for scripting."],
            "He founded it in 2009.",
        ),
        (
            "They hold values between 0 and 1.",
            ["The cache is shared by every machine."],
            "They hold values between 0 and 1.",
        ),
        (
            "It's hard to say why that works so well.",
            ["The cache is fast."],
            "It's hard to say why that works so well.",
        ),
        (
            "It's how the network learns its weights.",
            ["The cache is fast."],
            "It's how the network learns its weights.",
        ),
        (
            "This layer holds ten neurons.",
            ["The network is small."],
            "This layer holds ten neurons.",
        ),
        (
            "It was released in 2010.",
            ["A cache is a store of results."],
            "It was released in 2010.",
        ),
        (
            "It created a copy of the list.",
            ["C will now refer to this new list."],
            "It created a copy of the list.",
        ),
    ],
)
def test_leading_pronouns_resolve_only_to_what_the_previous_sentence_names(
    cleaned: str, previous: list[str], expected: str
) -> None:
    assert standalone(cleaned, previous, None) == expected


def test_first_person_plural_of_a_labelled_speaker_is_attributed() -> None:
    assert standalone("We meet twice a week on Zoom.", None, "Bekah Hawrot") == (
        "Bekah Hawrot says: We meet twice a week on Zoom."
    )
    assert (
        standalone("We meet twice a week on Zoom.", None, None) == "We meet twice a week on Zoom."
    )


def test_claims_are_standalone_while_quotes_stay_verbatim() -> None:
    text = (
        "[00:00:01] Bekah Hawrot: Nick is a senior software engineer at Forem in Montreal.\n"
        "[00:00:05] Bekah Hawrot: He's a big fan of TypeScript, uh, React and Node on Forem.\n"
        "[00:00:09] Nick Taylor: I've been working as a web developer since 2002 in Montreal.\n"
        "[00:00:14] Nick Taylor: The Forem code base is written in Ruby on Rails and Preact.\n"
        "[00:00:19] Nick Taylor: It runs the DEV community site for about a million developers.\n"
    )
    out = call("extract_claims", text)
    by_quote = {str(c["quote"]): str(c["claim"]) for c in out}
    for quote in by_quote:
        assert quote in text  # verbatim, unchanged
    assert by_quote["He's a big fan of TypeScript, uh, React and Node on Forem."] == (
        "Nick is a big fan of TypeScript, React and Node on Forem."
    )
    assert by_quote["I've been working as a web developer since 2002 in Montreal."] == (
        "Nick Taylor says: I've been working as a web developer since 2002 in Montreal."
    )
    assert by_quote["It runs the DEV community site for about a million developers."] == (
        "The Forem code base runs the DEV community site for about a million developers."
    )


def test_sentences_sharing_a_rare_term_are_not_merged() -> None:
    text = (
        "Now you're doing a little bit of React Native.\n\n"
        "The hospital scheduling system handles 4,000 appointments every single day.\n\n"
        "Have not used React Native before.\n\n"
        "Nurses confirm each appointment by text message two days before the visit.\n"
    )
    out = call("extract_claims", text)
    claims = [c["claim"] for c in out]
    assert len(claims) == len(set(claims)), claims  # no claim text repeated


def test_a_boundary_bonus_moves_a_caption_cut() -> None:
    from arkai.providers.builtin.text import _window_spans, word_offsets

    body = " ".join(f"word{i}" for i in range(40))  # no break word anywhere
    plain = _window_spans(body)
    starts = {s for s, _ in plain}
    offsets = word_offsets(body)
    target = next(k for k in range(12, 28) if offsets[k][0] not in starts)
    bonus = [0.0] * len(offsets)
    bonus[target] = 5.0
    moved = _window_spans(body, bonus=bonus)
    assert offsets[target][0] in {s for s, _ in moved}
    assert _window_spans(body, bonus=[0.0] * len(offsets)) == plain


def test_an_unpunctuated_have_you_is_a_question() -> None:
    from arkai.providers.builtin.text import looks_like_question

    assert looks_like_question("Have you found that giving talks helped your career")
    assert not looks_like_question("Having a mentor helped my career a lot")
