"""What a name looks like: a small gazetteer of well-known names and the shape rules that keep
code tokens, discourse phrases and product names out of ``person``.

spaCy's small English model tags by context, and talk about software fools it: "Webpack was a
pain" reads like a person, "USB-C" like an organisation. :data:`KNOWN` holds the type of widely
known software, languages, devices, services and companies (general knowledge, not the
development set). A name in it takes that type whatever NER voted; an entry marked ``?`` only
types a span NER found, the others are also searched for (case-sensitive, whole words) because NER
misses them on lowercase or unpunctuated speech. Nothing here is loaded from disk.
"""

from __future__ import annotations

import re

from arkai.providers.builtin.text import wordset

_TABLE = """
product: JavaScript TypeScript Python CoffeeScript PHP Perl Kotlin Scala Haskell Erlang Elixir
product: Clojure Fortran COBOL Lua MATLAB Julia Dart Objective-C C++ C# F# Golang WebAssembly
product: HTML HTML5 CSS CSS3 SQL GraphQL JSON YAML XML Markdown LaTeX Bash PowerShell
product: React React Native Preact Angular AngularJS Vue Vue.js Svelte Ember jQuery Next.js
product: Nuxt Gatsby Redux MobX Zustand Webpack Babel Vite Rollup Parcel ESLint Prettier Jest
product: Mocha Cypress Playwright Selenium Storybook Tailwind Bootstrap Sass Node Node.js Deno
product: npm Yarn pnpm Express Django Flask FastAPI Rails Ruby on Rails Laravel Spring
product: ASP.NET .NET Xamarin Unity Unreal TensorFlow PyTorch Keras NumPy pandas scikit-learn
product: spaCy Jupyter Docker Kubernetes Terraform Ansible Jenkins CircleCI Travis CI
product: GitHub Actions Git SVN Subversion TFS Mercurial Postgres PostgreSQL MySQL MariaDB
product: SQLite MongoDB Redis Cassandra Elasticsearch DynamoDB Firebase Supabase Heroku Netlify
product: Vercel AWS Azure Google Cloud Lambda S3 EC2 Linux Ubuntu Debian Windows macOS iOS
product: Android ChromeOS Chrome Firefox Safari Edge Opera Chromium VS Code Visual Studio Vim
product: Emacs Xcode IntelliJ Eclipse Excel Word PowerPoint Outlook SharePoint Lotus Photoshop
product: Illustrator Figma Sketch Slack Discord Zoom Teams Skype Trello Jira JIRA Asana Notion
product: Confluence WordPress Drupal Shopify Gmail Google Drive Google Docs Google Sheets
product: Google Classroom Google Chrome Google Maps YouTube Music iPhone iPad iPod iMac
product: MacBook MacBook Pro MacBook Air Mac Pro Mac mini Apple Watch Apple TV AirPods Siri
product: FaceTime iCloud iTunes Touch Bar Touch ID Face ID MagSafe Thunderbolt Lightning USB
product: USB-A USB-B USB-C Bluetooth Wi-Fi HDMI DisplayPort Ethernet Kindle Alexa Echo
product: PlayStation Xbox Nintendo Switch Galaxy Pixel ThinkPad Surface Raspberry Pi Arduino
product: ChatGPT GPT-3 GPT-4 Copilot Bard Gemini Claude Llama Final Cut Pro Premiere Geekbench
product: Cinebench Dolby Atmos Radeon GeForce Intel Core Xeon Ryzen Mechanical Turk
product: Commodore Commodore 64 Lotus 1-2-3 Apollo Zapier Postman Swagger OpenAPI Nginx Apache
product: Kafka RabbitMQ Hadoop Spark Airflow Snowflake Tableau Salesforce Gatsby Electron
org: Apple Microsoft Google Alphabet Amazon Meta Facebook Twitter Netflix IBM Intel AMD Nvidia
org: NVIDIA Oracle Samsung Sony Dell HP Lenovo Adobe Salesforce Uber Lyft Airbnb Stripe
org: PayPal Square Shopify Spotify Instagram WhatsApp LinkedIn Pinterest Reddit Snapchat TikTok
org: YouTube Twitch Patreon Discord Dropbox Atlassian GitHub GitLab Bitbucket Mozilla OpenAI
org: Anthropic
org: DeepMind Hugging Face Tesla SpaceX Yahoo eBay Craigslist Akamai Cloudflare Fastly
org: StumbleUpon CrowdFlower TechCrunch Reuters Bloomberg Wikipedia Stack Overflow Meetup
org: freeCodeCamp Free Code Camp DEV.to Forem CodeNewbie Coursera Udemy edX Khan Academy
org: MIT Stanford Harvard UCLA Berkeley Cornell Y Combinator Sequoia OWASP W3C IETF ECMA
org: NASA FBI CIA NSA WHO UN UNICEF NATO IMF Costco Walmart Target Starbucks
product?: Ruby Swift Go Rust Java C R Edge Echo Word Teams Spark
org?: Square Target
"""
# Entries on a "?" line, and those in AMBIGUOUS (also everyday words), type a span NER found
# but are never searched for on their own.

_COMPOUND = {
    "Ruby on Rails",
    "React Native",
    "Travis CI",
    "GitHub Actions",
    "Google Cloud",
    "VS Code",
    "Visual Studio",
    "Google Drive",
    "Google Docs",
    "Google Sheets",
    "Google Classroom",
    "Google Chrome",
    "Google Maps",
    "YouTube Music",
    "MacBook Pro",
    "MacBook Air",
    "Mac Pro",
    "Mac mini",
    "Apple Watch",
    "Apple TV",
    "Touch Bar",
    "Touch ID",
    "Face ID",
    "Raspberry Pi",
    "Nintendo Switch",
    "Final Cut Pro",
    "Dolby Atmos",
    "Intel Core",
    "Mechanical Turk",
    "Commodore 64",
    "Lotus 1-2-3",
    "Hugging Face",
    "Stack Overflow",
    "Free Code Camp",
    "Khan Academy",
    "Y Combinator",
}

# Languages are also fairly called concepts; the gazetteer says product.
AMBIGUOUS = frozenset(["Ruby", "Swift", "Go", "Rust", "Java", "C", "R", "Word", "Teams", "Edge"])
AMBIGUOUS |= frozenset(["Echo", "Square", "Target", "Spark", "Apollo", "Lotus", "Windows"])
AMBIGUOUS |= frozenset(["Lightning", "Surface", "Galaxy", "Pixel", "Switch", "Sketch", "Express"])
AMBIGUOUS |= frozenset(["Spring", "Unity", "Lambda", "Node", "Echo", "Bard", "Gemini", "Claude"])
AMBIGUOUS |= frozenset(["Llama", "Excel", "Word", "Zoom", "Notion", "Parcel", "Edge", "Opera"])


def _parse() -> tuple[dict[str, str], set[str]]:
    out: dict[str, str] = {}
    unsure: set[str] = set()
    compounds = sorted(_COMPOUND, key=len, reverse=True)
    for raw in _TABLE.strip().splitlines():
        label, _, rest = raw.partition(":")
        etype = label.rstrip("?")
        for name in compounds:
            if f" {name} " in f" {rest} ":
                out.setdefault(name, etype)
                rest = f" {rest} ".replace(f" {name} ", " ")
        for name in rest.split():
            out.setdefault(name, etype)
            if label.endswith("?"):
                unsure.add(name)
    return out, unsure


KNOWN, _UNSURE = _parse()
"""Well-known name → type (``product`` or ``org``)."""


KNOWN_FOLDED: dict[str, str] = {k.casefold(): v for k, v in KNOWN.items()}

SEARCHABLE: frozenset[str] = frozenset(
    k for k in KNOWN if k not in AMBIGUOUS and k not in _UNSURE and len(k) > 2
)
"""Known names searched for in the text even where NER saw nothing."""

#: Words that open a discourse phrase or an instruction, never a name ("For example", "Compare
#: React", "Common Git workflows"). Stripped from the front of a span.
LEADING_NOT_NAME: frozenset[str] = wordset(
    """
    a an and also anyway as at background basically besides both but by common compare
    consider currently define describe each either example explain finally first for further
    generally given hello hey hi however if imagine in instead just last like maybe meanwhile
    moreover most my next no note now of okay on once one or our overall perhaps please plus
    read remember say see second similarly since so some step still suppose thanks thank that
    the then there these this those though thus tip today use using well what when where
    whether which while why with yes yet your
    """
)

#: Words that are never a person on their own.
NOT_PERSON: frozenset[str] = wordset(
    """
    mom mommy mum dad daddy mother father sister brother grandma grandpa grandmother
    grandfather aunt uncle wife husband son daughter baby honey sir madam guys folks friends
    everyone everybody somebody background heights god lord yolo
    """
)

_CAMEL = re.compile(r"[a-z][A-Z]")
_CODE_CHARS = re.compile(r"[/_=<>{}()\[\]`|\\#@$;*]")
_WEB = re.compile(r"\.(?:js|io|to|com|org|net|dev|ai|app|py)$", re.IGNORECASE)
_CODE_LINE = re.compile(
    r"""(?x)
    ^\s*(?:SELECT|INSERT|UPDATE|DELETE|CREATE|ALTER|DROP|WITH)\s.*(?:FROM|INTO|TABLE|INDEX|SET|;)
    | [;{}]\s*$
    | ^\s*(?:def|class|import|from|return|const|let|var|function|fn|pub|\$|>>>|\#include)\s
    | \w\(.*\)\s*(?:;|\{|:)?\s*$
    """
)


_EVENT = re.compile(
    r"(?i)(?:fest|festival|con|conf|conference|summit|hackathon|expo|olympics|world cup|"
    r"championship|marathon|thanksgiving|christmas|easter|hanukkah|diwali|ramadan|new year)$"
)


def event_shaped(surface: str) -> bool:
    """Names of events and holidays by their last word ("Hacktoberfest", "PyCon", "Christmas")."""
    return bool(_EVENT.search(surface.strip())) and surface[:1].isupper()


def known_type(surface: str) -> str | None:
    """The gazetteer's type of ``surface`` (exact, then case-folded), or None."""
    return KNOWN.get(surface) or KNOWN_FOLDED.get(surface.casefold())


def looks_like_code(surface: str) -> bool:
    """A code token or a run of code rather than a name: ``useState/useReducer``,
    ``customer_id``, ``GET/POST``, ``DESC LIMIT 1000``."""
    if _CODE_CHARS.search(surface):
        return True
    words = surface.split()
    return len(words) >= 2 and all(w.isupper() or w.isdigit() for w in words)


def code_line(body: str) -> bool:
    """A line of code or a query that slipped outside a fence."""
    return bool(_CODE_LINE.search(body))


def not_a_person(surface: str) -> bool:
    """Shapes no person's name has: ``GraphQL``, ``USB-C``, ``Thunderbolt 3``, ``DEV.to``,
    ``SQL``, or a kinship or everyday word ("Mom", "Background")."""
    words = surface.split()
    if not words:
        return True
    if len(words) == 1 and words[0].casefold() in NOT_PERSON:
        return True
    for w in words:
        if _CAMEL.search(w) and not re.match(r"^(?:Mc|Mac|O'|D'|De|Di|Le|La)[A-Z]", w):
            return True
        if any(c.isdigit() for c in w) or _WEB.search(w) or ("-" in w and w.isupper()):
            return True
        if len(w) >= 2 and w.isupper() and len(words) == 1:
            return True
    return False


def strip_leading(surface: str) -> int:
    """How many characters of discourse words open ``surface`` ("For example" → all of it)."""
    cut = 0
    rest = surface
    while True:
        m = re.match(r"(\S+)(\s+|$)", rest)
        if not m or m.group(1).casefold().strip(",.:;") not in LEADING_NOT_NAME:
            return cut
        cut += m.end()
        rest = rest[m.end() :]
