"""The command line the GPU benchmarks share: `python -m benchmarks.NAME [COMMAND [ARG ...]]`."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable


def usage(module: str, commands: dict[str, Callable[..., object]]) -> str:
    """One line per command with its arguments (the function's parameter names, in capitals;
    optional ones in brackets). `module`: a benchmark's name, or a dotted module path."""
    def arg(p: inspect.Parameter) -> str:
        if p.kind is p.VAR_POSITIONAL:
            return f"[{p.name.upper()} ...]"
        return p.name.upper() if p.default is p.empty else f"[{p.name.upper()}]"

    def args(fn: Callable[..., object]) -> str:
        return " ".join(arg(p) for p in inspect.signature(fn).parameters.values())

    path = module if "." in module else f"benchmarks.{module}"
    return "\n".join(f"usage: python -m {path} {name} {args(fn)}".rstrip()
                     for name, fn in commands.items())


def run_command(module: str, commands: dict[str, Callable[..., object]], argv: list[str] | None = None) -> None:
    """Call the command named by argv[0] (the first command when none is named) with the
    rest of argv as its arguments. An unknown command, or too few or too many arguments for
    it, exits with the usage of every command (never a traceback)."""
    argv = sys.argv[1:] if argv is None else argv
    name, args = (argv[0], argv[1:]) if argv else (next(iter(commands)), [])
    fn = commands.get(name)
    if fn is not None:
        params = inspect.signature(fn).parameters.values()
        fixed = [p for p in params if p.kind is not p.VAR_POSITIONAL]
        most = len(args) if len(fixed) < len(params) else len(fixed)  # *rest: any number more
        if sum(p.default is p.empty for p in fixed) <= len(args) <= most:
            fn(*args)
            return
    problem = f"unknown command {name!r}" if fn is None else f"{name}: {len(args)} arguments"
    sys.exit(f"{problem}\n{usage(module, commands)}")
