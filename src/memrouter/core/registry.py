"""Names to lazily imported factories: the one registry behind backends and embedders.

A :class:`Registry` knows its built-ins as ``"module:attribute"`` import
paths, each with an install hint, and reads one entry-point group for
plugins (``memrouter.external.backends``, ``memrouter.embedders``). Built-ins are
entry points too, made here rather than read from the package metadata, so
they resolve exactly like plugins even when the installed metadata is stale.
A plugin may not take a built-in's name: it is ignored, with a warning.

Nothing is imported until a name is loaded, and every registry fails the
same way:

- an unknown name is a ``ConfigError`` (names come from configuration);
- a factory that cannot be imported is a ``NotInstalled`` with the install
  hint (the backend registry raises ``BackendNotInstalled``, which is one).
"""

from __future__ import annotations

from memrouter.core.errors import ConfigError, NotInstalled
from memrouter.core.lazylog import LazyLogger

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from importlib.metadata import EntryPoint
    from typing import Any

__all__ = ["Builtin", "Registry"]

log = LazyLogger(__name__)


class Builtin:
    """A built-in entry: its ``"module:attribute"`` and what to install when the import fails."""

    __slots__ = ("target", "hint")

    def __init__(self, target: str, hint: str) -> None:
        self.target = target
        self.hint = hint

    def __repr__(self) -> str:
        return f"Builtin({self.target!r}, {self.hint!r})"


class Registry:
    """One kind of pluggable component (``kind`` names it in messages), found by name.

    ``not_installed(name, hint)`` builds the error for a failed import; it
    must return a ``NotInstalled``.
    """

    __slots__ = ("kind", "group", "builtins", "not_installed")

    def __init__(
        self,
        kind: str,
        group: str,
        builtins: Mapping[str, Builtin],
        not_installed: Callable[[str, str], NotInstalled] = NotInstalled,
    ) -> None:
        self.kind = kind
        self.group = group
        self.builtins = builtins
        self.not_installed = not_installed

    def entry_points(self) -> dict[str, EntryPoint]:
        """Every loadable name: the built-ins first, then the installed plugins by name.

        Read anew on each call: installing a plugin needs no restart and no
        cache to reset.
        """
        from importlib.metadata import EntryPoint, entry_points

        found: dict[str, EntryPoint] = {
            name: EntryPoint(name=name, value=builtin.target, group=self.group)
            for name, builtin in self.builtins.items()
        }
        plugins = sorted(entry_points(group=self.group), key=lambda ep: ep.name)
        for ep in plugins:
            builtin = self.builtins.get(ep.name)
            if builtin is not None:
                if ep.value != builtin.target:  # memrouter's own metadata declares the same value
                    log.warning("ignoring plugin %r: %r is a built-in %s name", ep.value, ep.name, self.kind)
                continue
            found.setdefault(ep.name, ep)
        return found

    def names(self) -> list[str]:
        """The names ``load`` accepts: the built-ins in their order, then plugins sorted."""
        return list(self.entry_points())

    def load(self, name: str) -> Any:
        """Import and return what ``name`` points at (a factory, usually a class).

        ``ConfigError`` for an unknown name; ``not_installed(name, hint)``
        when the import fails or the attribute does not exist.
        """
        builtin = self.builtins.get(name)
        plugin = None
        if builtin is None:
            found = self.entry_points()
            plugin = found.get(name)
            if plugin is None:
                known = ", ".join(found) or "none"
                raise ConfigError(f"unknown {self.kind} {name!r} (known: {known})")
            target, hint = plugin.value, f"install the package that provides {plugin.value!r}"
        else:  # a plugin never takes a built-in's name: the installed metadata (about 30 ms to read) is not needed
            target, hint = builtin.target, builtin.hint
        try:
            return plugin.load() if plugin is not None else _load_target(target)
        except ImportError as exc:
            raise self.not_installed(name, f"{hint}; import failed: {exc}") from exc
        except AttributeError as exc:
            raise self.not_installed(name, f"{target!r} does not exist: {exc}") from exc


def _load_target(target: str) -> Any:
    """What ``"module:attribute"`` names, found as ``EntryPoint.load`` finds it."""
    from importlib import import_module

    module_name, _, attributes = target.partition(":")
    found = import_module(module_name)
    for attribute in filter(None, attributes.split(".")):
        found = getattr(found, attribute)
    return found
