"""Source kinds: each turns a URL or a local file into items ready to write (``Acquired``)."""
