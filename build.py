#!/usr/bin/env python3
"""Thin entry point: `python build.py [build|check|serve|schema|diagnose|new] ...` = `rootcause ...`."""

from rootcause.commands.cli import run_command

if __name__ == "__main__":
    run_command()
