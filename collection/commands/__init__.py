"""The subcommands of the command line, one module each, loaded lazily by `collection.cli`.

Shell: arguments, files and terminals; each command calls into the core and the run loop.
"""


def examples(*lines: str) -> str:
    """A command's epilog: real invocations, kept verbatim by click (the \\b marker stops rewrapping)."""
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines)
