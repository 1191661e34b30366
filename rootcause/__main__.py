"""`python -m rootcause ...` = `rootcause ...`."""

from .commands.cli import run_command

run_command()
