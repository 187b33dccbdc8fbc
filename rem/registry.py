"""Named extension points: each kind the config names by a string (models, routings, pruning methods, datasets,
report tables) has one `Registry`, so nothing else branches on the name. Built-in entries are imported on first
lookup; others come from the modules the REM_PLUGINS environment variable names (comma-separated)."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from rem.config import ConfigError

PLUGINS = "REM_PLUGINS"
T = TypeVar("T")


def load_plugins() -> None:
    """Import every module REM_PLUGINS names (each registers what it defines; a second import is a no-op)."""
    for module in (m.strip() for m in os.environ.get(PLUGINS, "").split(",")):
        if module:
            importlib.import_module(module)


def same_definition(a: object, b: object) -> bool:
    """One definition met twice (a module imported under two names, or reloaded), not two different entries."""
    names = [(getattr(x, "__module__", None), getattr(x, "__qualname__", None)) for x in (a, b)]
    return a is b or a == b or (names[0] == names[1] and names[0][1] is not None)


class Registry(Generic[T]):
    """Entries of one kind by name. `key` is the config key that names one (for the one-line error)."""

    def __init__(self, kind: str, key: str, built_in: dict[str, str] | None = None):
        self.kind, self.key = kind, key
        self.built_in = dict(built_in or {})
        self._entries: dict[str, T] = {}

    def register(self, name: str, entry: T) -> T:
        if not name:
            raise ValueError(f"a {self.kind} needs a name")
        if name in self._entries and not same_definition(self._entries[name], entry):
            raise ValueError(f"{self.kind} {name!r} registered twice")
        self._entries[name] = entry
        return entry

    def decorator(self, name: str) -> Callable[[T], T]:
        """`@registry.decorator("name")` on the entry."""
        return lambda entry: self.register(name, entry)

    def names(self) -> list[str]:
        """Every name a config may use: the built-in ones, then those registered since."""
        return [*self.built_in, *(n for n in self._entries if n not in self.built_in)]

    def find(self, name: str) -> T | None:
        """The entry, importing its built-in module or the plugins when it is not registered yet; None if unknown."""
        if name not in self._entries:
            if name in self.built_in:
                importlib.import_module(self.built_in[name])
            else:
                load_plugins()
        return self._entries.get(name)

    def get(self, name: str) -> T:
        entry = self.find(name)
        if entry is None:  # a name the config gave: a refusal naming its key
            raise ConfigError(f"{self.key}={name!r} is not one of {self.names()} (a {self.kind} of your own: "
                              f"register it in a module named in {PLUGINS})")
        return entry

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.find(name) is not None

    def items(self) -> Iterator[tuple[str, T]]:
        """Every entry, the REM_PLUGINS modules' included (loaded here, not in `names`, which a package may read
        while it is still being imported)."""
        load_plugins()
        for name in self.names():
            entry = self.find(name)
            if entry is not None:
                yield name, entry
