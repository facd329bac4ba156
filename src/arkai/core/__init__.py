"""Pure core: no files, no network, no clock. Bytes and strings in, values out."""
