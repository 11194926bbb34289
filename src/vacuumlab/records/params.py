"""What every study's parameters share: a frozen record that round-trips through the store's
JSON (``params()`` / ``from_params()``), and, for a run's config, ``from_preset``.

The stored dicts keep the keys and values the study wrote before these records existed, so a
store written then still opens, resumes and renders.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, fields, replace
from typing import Any, ClassVar, Self, cast

from vacuumlab.errors import VacuumlabError


class Params:
    """A frozen dataclass as plain JSON: tuples are stored as lists and read back as tuples."""

    __slots__ = ()

    def params(self) -> dict[str, Any]:
        data = asdict(cast(Any, self))
        return {k: list(v) if isinstance(v, tuple) else v for k, v in data.items()}

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> Self:
        """The record from stored parameters; keys it does not know are left out."""
        names = field_names(cls)
        known = {k: tuple(v) if isinstance(v, list) else v for k, v in params.items() if k in names}
        return cls(**known)


def field_names(cls: type) -> set[str]:
    return {f.name for f in fields(cast(Any, cls))}


class Config(Params):
    """A run's config: a preset, with any field overridden, checked before anything runs."""

    __slots__ = ()
    #: The study's name, for messages.
    study: ClassVar[str] = ""
    #: Fields added after runs of the study were first stored, each with the value a run
    #: stored without it ran with: such a run's config is still read whole.
    added: ClassVar[Mapping[str, Any]] = {}

    @classmethod
    def presets(cls) -> Mapping[str, Self]:
        """The study's presets by name, each a complete config."""
        raise NotImplementedError

    def checked(self, chosen: Mapping[str, Any]) -> Self:
        """This config, validated (a one-line VacuumlabError) and normalised; ``chosen`` are
        the fields the caller set, for rules that depend on what was left to the preset."""
        return self

    @classmethod
    def from_preset(cls, preset: str = "quick", **overrides: Any) -> Self:
        """The preset's config with ``overrides`` (None keeps the preset's value), checked."""
        presets = cls.presets()
        if preset not in presets:
            raise VacuumlabError(f"unknown preset {preset!r}; choose {', '.join(presets)}")
        chosen = {k: v for k, v in overrides.items() if v is not None}
        unknown = sorted(set(chosen) - field_names(cls))
        if unknown:
            raise VacuumlabError(f"unknown {cls.study} study setting(s): {', '.join(unknown)}")
        return replace(cast(Any, presets[preset]), **chosen).checked(chosen)  # type: ignore[no-any-return]


def at_least_one(**values: int) -> None:
    """Refuse counts below one, naming the options as the command line spells them."""
    if min(values.values()) < 1:
        names = [f"--{name}" for name in values]
        listed = ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else names[0]
        raise VacuumlabError(f"{listed} must be at least 1")
