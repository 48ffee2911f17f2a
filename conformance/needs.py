"""The runner's own dependencies (not the harness's): checked before anything starts, so a
missing package is one line naming it and how to install it, never a harness blamed for it
or a traceback (issue 26, D-76)."""

from __future__ import annotations

import importlib
import shlex
import sys

# module → (the package to install, what the runner uses it for)
RUNNER_MODULES = {
    "jsonschema": ("jsonschema", "validates cases and every harness reply"),
    "referencing": ("jsonschema", "resolves the case schema's references"),
    "trustme": ("trustme", "mints the loopback fixture server's TLS certificates"),
}


class MissingDependency(RuntimeError):
    def __init__(self, module: str, error: BaseException, command: str) -> None:
        package, why = RUNNER_MODULES[module]
        self.package = package
        self.module = module
        detail = str(error) or type(error).__name__
        super().__init__(
            f"conformance: `{command}` needs the Python package {package} (the runner {why}); this interpreter "
            f"cannot import {module} ({detail}). Install it: {shlex.quote(sys.executable)} -m pip install {package}")


def modules_for(command: str, mode: str = "inline") -> tuple[str, ...]:
    if command == "check":
        return ("jsonschema", "referencing")
    if command == "run":
        return ("jsonschema", "trustme") if mode == "loopback" else ("jsonschema",)
    return ()


def require(command: str, mode: str = "inline") -> None:
    """Raise MissingDependency for the first module `command` needs that does not import."""
    label = f"{command} --mode loopback" if command == "run" and mode == "loopback" else command
    for module in modules_for(command, mode):
        try:
            importlib.import_module(module)
            if module == "jsonschema":
                importlib.import_module("jsonschema.validators")
        except ImportError as exc:
            raise MissingDependency(module, exc, label) from None
