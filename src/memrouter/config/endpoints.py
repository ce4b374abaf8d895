"""Models served over HTTP: ``[embed] url`` and ``[rerank] url`` in memrouter.toml.

``memrouter.config.settings`` reads the sections; this module checks them
(``endpoint_config``) and holds what they say (``EndpointConfig``). The key is
read here, at the edge, from the environment variable that ``key_env`` names,
and is never shown (``summary``).
"""

from __future__ import annotations

from collections.abc import Mapping

from memrouter.core.errors import ConfigError
from memrouter.core.records import record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["EndpointConfig", "Key", "endpoint_config", "redacted_url"]


class Key(str):
    """A key read from the environment: a string that never shows itself in a ``repr``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "'***'"


@record
class EndpointConfig:
    """A model served over HTTP: ``[embed] url`` (an OpenAI-compatible embeddings API) or ``[rerank] url``
    (a ``/rerank`` API); see ``memrouter.embed.endpoint``. ``key`` is read from the environment variable
    ``key_env`` names, here at the edge, and never shown."""

    url: str
    model: str | None = None
    dimension: int | None = None
    key_env: str | None = None
    key: str | None = None  # a Key: never shown in a repr
    batch_size: int = 64
    timeout: float = 30.0

    def summary(self) -> dict[str, Any]:
        return {
            "url": redacted_url(self.url), "model": self.model, "dimension": self.dimension,
            "key_env": self.key_env, "key_set": bool(self.key), "batch_size": self.batch_size,
            "timeout": self.timeout,
        }  # fmt: skip


def endpoint_config(section: dict[str, Any], name: str, env: Mapping[str, str]) -> EndpointConfig:
    """``[embed]`` or ``[rerank]`` with a ``url``: the endpoint, its key read from ``key_env``'s variable."""
    url = section.get("url")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ConfigError(f"[{name}] url must be an http:// or https:// URL")
    model = section.get("model")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise ConfigError(f"[{name}] model must be a name")
    if name == "embed" and model is None:
        raise ConfigError("[embed] model must name the endpoint's model when [embed] url is set")
    key_env = section.get("key_env")
    if key_env is not None and (not isinstance(key_env, str) or not key_env.strip()):
        raise ConfigError(f"[{name}] key_env must name an environment variable")
    found = env.get(key_env) if key_env else None
    key = Key(found) if found else None
    if key_env and not key:
        raise ConfigError(f"[{name}] key_env names {key_env}, which is not set (or empty)")
    dimension = section.get("dimension")
    if dimension is not None and (
        isinstance(dimension, bool) or not isinstance(dimension, int) or not 1 <= dimension <= 65536
    ):
        raise ConfigError(f"[{name}] dimension must be a whole number from 1 to 65536")
    batch_size = section.get("batch_size", 64)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or not 1 <= batch_size <= 4096:
        raise ConfigError(f"[{name}] batch_size must be a whole number from 1 to 4096")
    timeout = section.get("timeout", 30.0)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= 600:
        raise ConfigError(f"[{name}] timeout must be a number of seconds, more than 0 and at most 600")
    return EndpointConfig(url, model, dimension, key_env, key, batch_size, float(timeout))


def redacted_url(url: str) -> str:
    """``url`` without its password (``user:password@`` or a ``password=`` parameter)."""
    import re

    url = re.sub(r"([?&]password=)[^&#]*", r"\1***", url, flags=re.IGNORECASE)
    head, sep, tail = url.partition("://")
    credentials, at, rest = tail.rpartition("@")
    if not sep or not at or ":" not in credentials:
        return url
    return f"{head}://{credentials.split(':', 1)[0]}:***@{rest}"
