"""The subcommands of the command line, one module each, loaded lazily by `collection.cli`.

Shell: arguments, files and terminals; each command calls into the core and the run loop.
"""
