#!/usr/bin/env python3
"""Thin entry point: `python build.py [build|check|serve|schema|diagnose|new] ...` = `rootcause ...`."""

import sys

from rootcause.commands.cli import main

if __name__ == "__main__":
    sys.exit(main())
