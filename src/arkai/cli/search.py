"""``arkai search``, ``arkai context``, ``arkai library``, ``arkai show``, ``arkai topics``.

The operations are imported inside the commands so that ``arkai --help`` and the other
commands do not pay for numpy, scipy or scikit-learn.
"""

from __future__ import annotations

from typing import Any

import click

from arkai.cli.common import get_repo, json_option
from arkai.cli.output import emit_json, say
from arkai.core.grammar import format_page
from arkai.errors import EXIT_ERROR

MODES = ("hybrid", "lexical", "vector")


class QueryCommand(click.Command):
    """A command whose QUERY words may start with ``-`` (exclusions): click would take
    ``-word`` for an option, so an unknown option says to put the query after ``--``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        given = list(args)  # click consumes ``args``
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:
            # click names only the letter it tripped on (-q of -queen): show the whole word.
            known = {o for p in self.params for o in getattr(p, "opts", ())}
            words = given[: given.index("--")] if "--" in given else given
            word = next(
                (a for a in words if a.startswith(exc.option_name) and a not in known),
                exc.option_name,
            )
            raise click.UsageError(
                f"{word} is not an option of `arkai {self.name}`; to search for words starting "
                f"with '-' (exclusions), put the query after --: arkai {self.name} -- … {word}",
                ctx,
            ) from None


def _lane(lane: str, v: dict[str, Any]) -> str:
    if lane == "feedback":
        return f"feedback {v['score']:+d} votes ({v['contribution']:+.4g})"
    if lane == "rerank":
        place = f"#{v['rank']}" if v["rank"] else "unscored"
        return f"rerank {place} (hook score {v['score']:.4g}, {v['contribution']:+.4g})"
    return f"{lane} #{v['rank']} (score {v['score']:.4g}, {v['contribution']:+.4g})"


def _hooks(info: dict[str, Any]) -> None:
    exp = info.get("expand")
    if exp is not None:
        lanes = ", ".join(f"{lane} {text!r}" for lane, text in exp["lanes"].items())
        say(f"expand hook: lex {exp['lex']}, vec {exp['vec']}; lanes: {lanes or 'none'}")
    rr = info.get("rerank")
    if rr is not None:
        snips = f", snippets for {len(rr['snippets'])}" if rr["snippets"] else ""
        say(f"rerank hook: {len(rr['scores'])} of {rr['candidates']} candidates scored{snips}")
    fb = info.get("feedback")
    if fb is not None:
        votes = ", ".join(f"{cid} {n:+d}" for cid, n in sorted(fb["votes"].items()))
        say(f"feedback ({fb['file']}): {votes}")


def _lanes(explain: list[dict[str, Any]]) -> str:
    parts = []
    for e in explain:
        lanes = ", ".join(_lane(lane, v) for lane, v in e["lanes"].items())
        parts.append(f"{e['kind']} chunk {e['chunk']}: {lanes} = {e['score']:.4g}")
    return "; ".join(parts)


@click.command(cls=QueryCommand)
@click.argument("query", nargs=-1, required=True)
@click.option("-k", "k", type=click.IntRange(1, 1000), default=10, show_default=True,
              help="How many items to return.")  # fmt: skip
@click.option("--mode", type=click.Choice(MODES), default="hybrid", show_default=True,
              help="Ranking lanes: both fused, BM25 only, or embeddings only.")  # fmt: skip
@click.option("--explain", is_flag=True,
              help="Show each lane's rank and contribution, the hooks' query variants and "
                   "rerank scores, and feedback boosts.")  # fmt: skip
@json_option
@click.pass_context
def search(ctx: click.Context, query: tuple[str, ...], k: int, mode: str, explain: bool,
           as_json: bool) -> None:  # fmt: skip
    """Search the library: words, "phrases", -exclusions and filters (in:TYPE, tag:T,
    after:DATE, before:DATE, asof:DATE). Each result is an item with its best passages,
    line links, snippets and the claims found there. Exits 5 when nothing matches."""
    from arkai.ops.search import search as run_search

    result = run_search(get_repo(ctx), " ".join(query), k=k, mode=mode, explain=explain)
    if as_json:
        emit_json(result.to_dict())
        if result.unreadable:
            ctx.exit(EXIT_ERROR)
        return
    for w in result.warnings:
        click.echo(f"arkai: warning: {w}", err=True)
    for problem in result.unreadable:
        click.echo(f"arkai: error: {problem} (that item's claims are left out)", err=True)
    if result.asof:
        a = result.asof
        say(f"as of {a['date']}: commit {str(a['commit'])[:12]} ({a['committed_at']}), "
            f"{a['items']} items")  # fmt: skip
    if explain and result.min_similarity is not None:
        best = "-" if result.best_similarity is None else f"{result.best_similarity:.3f}"
        say(f"vector floor: hits >= {result.min_similarity:g}; with no word matched, the best "
            f"passage must reach {result.answer_floor:g} (best passage {best})")  # fmt: skip
    if explain:
        _hooks(result.hooks)
    for item in result.results:
        say(f"{item.rank}. {item.title}  [{item.content_type}, {item.content_id}]  "
            f"score {item.score:.4g}")  # fmt: skip
        for hit in item.hits:
            when = f" {hit.timestamp}" if hit.timestamp else ""
            page = f"{format_page(hit.page)}, " if hit.page else ""
            say(f"   {page}L{hit.start_line}-{hit.end_line}{when}  {hit.link}")
            say(f"     {hit.marked_snippet}")
            for c in hit.claims:
                mark = "*" if c.matched else "-"
                where = f"{format_page(c.page)}, L{c.line}" if c.page else f"L{c.line}"
                say(f"     {mark} claim {c.evidence_id} ({where}): {c.claim}")
            if explain:
                say(f"     explain: {_lanes(hit.explain)}")
        say()
    if result.unreadable:
        ctx.exit(EXIT_ERROR)


@click.command(cls=QueryCommand)
@click.argument("query", nargs=-1, required=True)
@click.option("--budget", "budget", type=click.IntRange(1), default=2000, show_default=True,
              help="Token budget of the pack (tokens ≈ characters / 4).")  # fmt: skip
@click.option("-k", "k", type=click.IntRange(1, 1000), default=20, show_default=True,
              help="How many items the underlying search may draw from.")  # fmt: skip
@click.option("--mode", type=click.Choice(MODES), default="hybrid", show_default=True,
              help="Ranking lanes of the underlying search.")  # fmt: skip
@json_option
@click.pass_context
def context(ctx: click.Context, query: tuple[str, ...], budget: int, k: int, mode: str,
            as_json: bool) -> None:  # fmt: skip
    """Print a prompt-ready context pack for QUERY: the best evidence (quoted claims, then
    passages), deduplicated, within the token budget, each with its citation. Same query
    markup as `arkai search`; exits 5 when nothing matches."""
    from arkai.ops.context import context as run_context

    pack = run_context(get_repo(ctx), " ".join(query), budget_tokens=budget, k=k, mode=mode)
    if as_json:
        emit_json(pack.to_dict())
    else:
        click.echo(pack.markdown, nl=False)


@click.command()
@click.option("--type", "content_type", metavar="TYPE",
              help="Only this folder: youtube, podcasts, articles, pdfs, chats, notes, "
                   "transcripts (or a sub-folder such as chats/chatgpt).")  # fmt: skip
@click.option("--tag", metavar="TAG", help="Only items with this tag.")
@json_option
@click.pass_context
def library(ctx: click.Context, content_type: str | None, tag: str | None, as_json: bool) -> None:
    """List the items in library/ (with the index's figures where the catalog has the item);
    says when the search index is stale."""
    from arkai.ops.library import library_listing

    listing = library_listing(get_repo(ctx), content_type=content_type, tag=tag)
    if as_json:
        emit_json(listing.to_dict())
        return
    rows = listing.items
    for w in listing.warnings:
        click.echo(f"arkai: warning: {w}", err=True)
    for r in rows:
        tags = f"  [{', '.join(r.tags)}]" if r.tags else ""
        claims = r.claims if r.claims is not None else "?"
        say(f"{r.id}  {r.content_type!s:<12} {claims:>4} claims  {r.title}{tags}")
    say(f"{len(rows)} item{'' if len(rows) == 1 else 's'}")


@click.command()
@click.argument("ident", metavar="ID")
@click.option("--full", is_flag=True, help="Also list every claim and the transcript's path.")
@json_option
@click.pass_context
def show(ctx: click.Context, ident: str, full: bool, as_json: bool) -> None:
    """Show one item (content ID, ≥ 8-character prefix, or source ID): metadata, claim counts,
    top entities and summary."""
    from arkai.ops.library import show_item

    info = show_item(get_repo(ctx), ident, full=full)
    if as_json:
        emit_json(info.to_dict())
        return
    meta = info.metadata
    say(f"{info.title}  ({info.id})")
    say(f"  {'path':<10} {info.path}")
    say(f"  {'type':<10} {meta.get('content_type')}")
    for key in ("url", "published", "created_at"):
        if meta.get(key):
            say(f"  {key:<10} {meta[key]}")
    if meta.get("tags"):
        say(f"  {'tags':<10} {', '.join(meta['tags'])}")
    statuses = ", ".join(f"{v} {k}" for k, v in info.by_status.items()) or "none"
    reviews = ", ".join(f"{v} {k}" for k, v in info.by_review.items())
    say(f"  {'claims':<10} {info.claims_total} ({statuses}{'; ' + reviews if reviews else ''})")
    top = ", ".join(f"{e.name} ({e.type}, {e.mentions})" for e in info.top_entities)
    say(f"  {'entities':<10} {info.entities_total}{': ' + top if top else ''}")
    if info.summary:
        say()
        say(info.summary)
    if info.claims is not None:
        say()
        say(f"transcript: {info.transcript}")
        for c in info.claims:
            where = f"L{c.line}" if c.line else "unresolved"
            if c.page:
                where = f"{format_page(c.page)}, {where}"
            review = f" [{c.review}]" if c.review else ""
            say(f"  {c.evidence_id}  {c.status:<10} {where:<6}{review} {c.claim}")


@click.command()
@click.argument("term", nargs=-1, required=True)
@click.option("-n", "limit", type=click.IntRange(1), default=20, show_default=True,
              help="At most this many grep lines.")  # fmt: skip
@json_option
@click.pass_context
def topics(ctx: click.Context, term: tuple[str, ...], limit: int, as_json: bool) -> None:
    """Look TERM up in the topic index (index/topics.json), with synonyms from synonyms.yaml
    and stemming; for terms not in the index, grep the transcripts instead. Says which it
    used; exits 5 when neither finds anything."""
    from arkai.ops.topics import topics as run_topics

    found = run_topics(get_repo(ctx), " ".join(term), limit=limit)
    if as_json:
        emit_json(found.to_dict())
        return
    text = found.term
    if found.source == "topics":
        hits = found.results
        say(f"topic index: {len(hits)} items for {text!r}")
        for h in hits:
            terms = ", ".join(h["terms"])
            say(f"  {h['content_id']}  {h['relevance']:<6} via {h['via']:<7} {h['title']}"
                f"  (terms: {terms}; {len(h['chunks'])} chunks)")  # fmt: skip
            if h.get("condensed_chunks"):
                say(f"      condensed chunks: {h['condensed_chunks']}")
            for link in h.get("links", []):
                say(f"      {link}")
        return
    lines = found.results
    say(f"{text!r}: {found.reason}; grep found {len(lines)} lines")
    for ln in lines:
        say(f"  {ln.get('link') or ln['content_id']}: {ln['text'].strip()}")
