"""The version of rootcause: part of every cache key and of the compiled signature index."""

__version__ = "0.1.0"
