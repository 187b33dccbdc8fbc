"""A params.yaml value read against its dataclass annotation: the one type check that a section's keys
(`rem.config.root`) and a registry entry's options (`rem.config.options`) both go through, so both refuse a value in
the same one line: the key, the entry it belongs to, the type it must be and what it got."""

from __future__ import annotations

import copy
import types
import typing
from dataclasses import dataclass
from typing import Any, Literal

from rem.config.sections import ConfigError

# How a refusal names each type a YAML value can have. YAML has no tuple: a tuple is written as a list.
EXPECTED = {int: "an integer (int)", float: "a number (float)", bool: "true or false (bool)", str: "a string (str)",
            list: "a list", tuple: "a list (tuple)", dict: "a mapping"}
SEQUENCES = (list, tuple)


def members(annotation: Any) -> tuple[Any, ...]:
    """The members of a union (`int | None`, `Optional[int]`), else the annotation alone."""
    if typing.get_origin(annotation) in (types.UnionType, typing.Union):
        return typing.get_args(annotation)
    return (annotation,)


def literal_value(value: Any, allowed: tuple) -> Any:
    """`value` as a Literal of `allowed` reads it: YAML 1.1 reads a bare on/off as a boolean (DVC's -S writes it
    bare), so True is "on" where "on" and "off" are allowed."""
    if isinstance(value, bool) and {"on", "off"} <= set(allowed):
        return "on" if value else "off"
    return value


def fixed_length(annotation: Any) -> int | None:
    """How many items a `tuple[int, str]` holds (each of its own type); None for a list or `tuple[int, ...]`."""
    args = typing.get_args(annotation)
    return len(args) if typing.get_origin(annotation) is tuple and args and args[-1] is not Ellipsis else None


def describe(annotation: Any) -> str:
    """What a value of `annotation` must be, as a refusal says it."""
    if len(members(annotation)) > 1:
        named = [describe(m) for m in members(annotation) if m is not type(None)]
        return " or ".join(named + (["null"] if type(None) in members(annotation) else []))
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Literal:
        return "one of " + ", ".join(map(str, args))
    if fixed_length(annotation):
        return f"a list of {fixed_length(annotation)} (tuple)"
    return EXPECTED.get(origin or annotation, str(annotation))


@dataclass(frozen=True)
class Reader:
    """Reads values against annotations. `source` prefixes a refusal (the params file), `entry` follows its key (the
    registry entry whose option it is); `strict`: an annotation outside `EXPECTED` is a TypeError (a section's
    fields are ours), not a value left unchecked (an entry's options may be annotated with anything)."""

    source: str = ""
    entry: str = ""
    strict: bool = True

    def refusal(self, key: str, annotation: Any, value: Any) -> ConfigError:
        prefix, where = f"{self.source}: " if self.source else "", f" of {self.entry}" if self.entry else ""
        return ConfigError(f"{prefix}{key}{where} must be {describe(annotation)}; got {value!r} "
                           f"({type(value).__name__})")

    def admits(self, key: str, annotation: Any, value: Any) -> bool:
        """Whether `value` is of the annotation's own type (a container's items are read after)."""
        origin = typing.get_origin(annotation)
        if origin is Literal:
            allowed = typing.get_args(annotation)
            value = literal_value(value, allowed)
            return any(value == a and type(value) is type(a) for a in allowed)  # True is not 1, nor 1 True
        plain = origin or annotation
        if plain is type(None):
            return value is None
        if isinstance(value, bool) and plain in (int, float):
            return False  # a bool is an int to Python, never to a config
        if plain is float:
            return isinstance(value, (int, float))  # an int is a number too
        if plain in SEQUENCES:
            return isinstance(value, SEQUENCES)
        if plain in EXPECTED:
            return isinstance(value, plain)
        if self.strict:
            raise TypeError(f"unsupported config annotation {annotation!r} for {key}")
        # Any, a class of the entry's own, a callable, a type variable: no YAML value spells one, and what it
        # accepts is the entry's to say, so its own checks (`__post_init__`) judge the value
        return True

    def read(self, key: str, value: Any, annotation: Any) -> Any:
        """`value` of `key` as its annotation asks: an int as a float, a list as a tuple, containers copied with
        each item read; ConfigError in one line if it is not of the annotated type."""
        for member in members(annotation):
            if self.admits(key, member, value):
                return self.convert(key, value, member)
        raise self.refusal(key, annotation, value)

    def convert(self, key: str, value: Any, annotation: Any) -> Any:
        origin, args = typing.get_origin(annotation), typing.get_args(annotation)
        if origin is Literal:
            return literal_value(value, args)
        if annotation is float:
            return float(value)
        if (origin or annotation) in SEQUENCES:
            return self.sequence(key, value, annotation)
        if (origin or annotation) is dict:
            if not args:
                return copy.deepcopy(value)
            return {self.read(f"{key}.{k}", k, args[0]): self.read(f"{key}.{k}", v, args[1]) for k, v in value.items()}
        return value

    def sequence(self, key: str, value: Any, annotation: Any) -> list | tuple:
        origin, args = typing.get_origin(annotation), typing.get_args(annotation)
        if fixed_length(annotation) not in (None, len(value)):
            raise self.refusal(key, annotation, value)
        kinds = args if fixed_length(annotation) else args[:1] * len(value)  # list[int]: each an int; list: any
        items = [self.read(f"{key}[{i}]", item, kind) for i, (kind, item) in enumerate(zip(kinds, value))] \
            if kinds else list(value)
        return tuple(items) if (origin or annotation) is tuple else items


def checked_value(key: str, value: Any, annotation: Any, *, source: str = "", entry: str = "",
                  strict: bool = True) -> Any:
    """`value` of config key `key` read against `annotation` by a `Reader(source, entry, strict)`."""
    return Reader(source, entry, strict).read(key, value, annotation)
