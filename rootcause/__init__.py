"""rootcause: an encyclopedia of ML training failures and the static-site generator that builds it."""

__version__ = "0.1.0"
