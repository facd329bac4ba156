"""arkai: a git repository as a knowledge library whose every claim carries a receipt."""

__version__ = "0.1.0"
