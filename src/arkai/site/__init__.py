"""The library as a static MkDocs-Material site (``arkai site build`` / ``serve``).

- :mod:`~arkai.site.build` — the operation: pages into ``.site-build/docs``, the generated
  config, then ``mkdocs build`` (incremental; dirty when safe).
- :mod:`~arkai.site.collect` — one item's files, parsed and checked, and its cached summary.
- :mod:`~arkai.site.pages` — the item page and the transcript page.
- :mod:`~arkai.site.indexes` — home, library, tags, entities, topics, beliefs, validation.
- :mod:`~arkai.site.transcript` — transcript lines as HTML with ``#L<n>`` anchors and claim marks.
- :mod:`~arkai.site.search` — the search-index entries arkai writes for its pages.
- :mod:`~arkai.core.escape`, :mod:`~arkai.site.html`, :mod:`~arkai.site.links` — escaping,
  HTML helpers, page paths and URLs.
- :mod:`~arkai.site.config` — the user's ``mkdocs.yml`` (read only) and the generated config.
- :mod:`~arkai.site.hooks` — the MkDocs hook the generated config loads.
- :mod:`~arkai.site.serve` — ``mkdocs serve`` on 127.0.0.1.

See ``docs/site.md``.
"""
