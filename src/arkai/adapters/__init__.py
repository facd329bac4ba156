"""Adapters: the only modules that touch the filesystem, git, DVC or the network."""
