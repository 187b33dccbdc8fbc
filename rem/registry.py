"""Named extension points: each kind the config names by a string (models, routings, pruning methods, datasets,
report tables) has one `Registry`, so nothing else branches on the name. Built-in entries come from the modules a
registry is given, others from the modules the REM_PLUGINS environment variable names (comma-separated).

One convention for every kind: a registry names the modules that define its built-in entries, and imports them all
the first time it is asked anything. Each entry is named once, by its decorator (a map of names beside the
decorators had to be kept in step with them), and importing a registry stays light: `rem.config` and the fetch stage
read a registry without importing torch, the report tables or a dataset's readers until a name is asked for."""

from __future__ import annotations

import importlib
import os
import sys
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

    def __init__(self, kind: str, key: str, modules: tuple[str, ...] = ()):
        self.kind, self.key = kind, key
        self.modules = tuple(modules)  # those that register the built-in entries
        self._entries: dict[str, T] = {}
        self._listed_in: dict[str, str] = {}  # a built-in entry's name -> the listed module that registered it
        self._loading = False

    def register(self, name: str, entry: T) -> T:
        if not name:
            raise ValueError(f"a {self.kind} needs a name")
        if name in self._entries and not same_definition(self._entries[name], entry):
            raise ValueError(f"{self.kind} {name!r} registered twice")
        self._entries[name] = entry
        module = self._registering_module()
        if module is not None:
            self._listed_in.setdefault(name, module)
        return entry

    def _registering_module(self) -> str | None:
        """The listed module whose import runs this registration (its top level is on the stack), None for a
        plugin's: the built-in entries are ordered by it, whichever module something else happened to import first."""
        frame = sys._getframe(1)
        while frame is not None and frame.f_globals.get("__name__") not in self.modules:
            frame = frame.f_back
        return None if frame is None else frame.f_globals["__name__"]

    def decorator(self, name: str) -> Callable[[T], T]:
        """`@registry.decorator("name")` on the entry."""
        return lambda entry: self.register(name, entry)

    def load_built_in(self) -> None:
        """Import the modules of the built-in entries (each registers what it defines; a second import is a no-op).
        A module that asks its own registry while it is being imported sees the entries registered so far."""
        if self._loading:
            return
        self._loading = True
        try:
            for module in self.modules:
                importlib.import_module(module)
        except BaseException:
            self._loading = False  # asked again, it tries again, and fails again with the same error
            raise

    def names(self) -> list[str]:
        """Every name a config may use: the built-in ones in the order of their modules, then the others in the order
        they registered."""
        self.load_built_in()
        place = {module: n for n, module in enumerate(self.modules)}
        built_in = sorted(self._listed_in, key=lambda name: place[self._listed_in[name]])  # stable: a module's order
        return [*built_in, *(name for name in self._entries if name not in self._listed_in)]

    def find(self, name: str) -> T | None:
        """The entry, importing the built-in modules, then the plugins, when it is not registered yet; None if
        unknown."""
        if name not in self._entries:
            self.load_built_in()
        if name not in self._entries:
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
        while it is still being imported), the built-in ones first."""
        self.load_built_in()
        load_plugins()
        for name in self.names():
            entry = self.find(name)
            if entry is not None:
                yield name, entry
