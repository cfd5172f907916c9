"""Command-line front end: ``batsched-ml COMMAND`` (``batsched-ml --help`` lists the commands).

``parser``: the flags of every command; ``commands``: what the core commands do; ``process``:
:func:`main`, which runs one command and turns user errors and interrupts into one line and an
exit code."""

from .runs import run_config
from .parser import DefaultsHelpFormatter, OneLineErrorParser, build_parser
from .process import NOTHING_STARTED, main

__all__ = ["NOTHING_STARTED", "DefaultsHelpFormatter", "OneLineErrorParser", "build_parser", "main", "run_config"]
