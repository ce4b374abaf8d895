"""Hindsight (``hindsight-api`` 1.1) as an external backend: memories retained into a bank, recall as an augmenter.

Hindsight is a memory server (REST under ``/v1/default/banks/<bank>``): what it
retains, an LLM turns into facts (with entities and times), embedded and
linked; its recall fuses semantic, keyword, graph and temporal search. The
backend speaks that REST API with the standard library only.

Sync (the engine of ``memrouter.external.sync``) retains each memory as one
Hindsight document (``POST .../memories``, synchronous), whose id is the
memory's remote id: the file text as stored, the context ``memrouter:<name>``,
the record time as its timestamp, and in its metadata the title, tags,
keywords, importance, provenance and memrouter's content hash. An update
retains the same document again (Hindsight replaces its facts); a delete marks
it obsolete by its tags (``memrouter:obsolete``, with the reason and the
replacement as ``memrouter:reason:...`` and ``memrouter:superseded-by:...``),
the only field Hindsight changes without extracting again, and recall leaves
those out. The backend ``SupportsInventory`` (``GET .../documents``), so a
bank that lost documents is filled again by the next sync.

Search is Hindsight's recall of facts (``world`` and ``experience``, not the
LLM's consolidated observations), one hit per document, the best fact first;
synced copies are left out of the merge by their document id, so what it adds
is what others retained into the bank.

Configuration (``[backends.hindsight]``): ``url`` (default
``http://127.0.0.1:8888``), ``bank`` (default: the project folder's name),
``token`` (sent as ``Authorization: Bearer``), ``budget`` (recall's
``low``/``mid``/``high``, default ``mid``), ``timeout`` (seconds per call,
default 60: a retain waits for the LLM) and ``health_ttl`` (seconds, default 30).

No extra is needed on memrouter's side; the server is ``pip install hindsight-api``.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memrouter.core.errors import BackendContractError, BackendUnavailable, ConfigError, InvalidInput, NotFound
from memrouter.external.backends.base import ExternalHit, HealthChecked, MemoryDraft, RemoteMemory
from memrouter.external.backends.health import DEFAULT_TTL_S, HealthCheck
from memrouter.store.parse import content_hash

__all__ = ["BUDGETS", "HindsightBackend", "HindsightConfig", "OBSOLETE_TAG"]

BUDGETS = ("low", "mid", "high")
OBSOLETE_TAG = "memrouter:obsolete"
REASON_PREFIX = "memrouter:reason:"
SUPERSEDED_PREFIX = "memrouter:superseded-by:"
# Recall has no top-k: it returns what fits a token budget; this much per hit asked for.
TOKENS_PER_HIT = 1024
PAGE = 1000  # documents per page of the inventory
RECALL_TYPES = ["world", "experience"]
_UNAVAILABLE_STATUS = frozenset({408, 429, 502, 503, 504})


@dataclass(frozen=True, slots=True)
class HindsightConfig:
    """The settings of one Hindsight backend (see the module docstring)."""

    name: str = "hindsight"
    url: str = "http://127.0.0.1:8888"
    bank: str = "memrouter"
    token: str | None = None
    budget: str = "mid"
    timeout: float = 60.0
    health_ttl: float = DEFAULT_TTL_S

    @classmethod
    def from_mapping(cls, settings: Mapping[str, Any]) -> HindsightConfig:
        known = {"name", "url", "bank", "token", "budget", "timeout", "health_ttl"}
        unknown = sorted(set(settings) - known)
        if unknown:
            raise ConfigError(f"[backends.hindsight] unknown key(s): {', '.join(unknown)}")
        try:
            config = cls(
                name=str(settings.get("name", _DEFAULTS.name)),
                url=str(settings.get("url", _DEFAULTS.url)).rstrip("/"),
                bank=str(settings.get("bank", _DEFAULTS.bank)),
                token=None if settings.get("token") in (None, "") else str(settings["token"]),
                budget=str(settings.get("budget", _DEFAULTS.budget)),
                timeout=float(settings.get("timeout", _DEFAULTS.timeout)),
                health_ttl=float(settings.get("health_ttl", _DEFAULTS.health_ttl)),
            )
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"[backends.hindsight] bad setting: {exc}") from exc
        if config.timeout <= 0 or config.health_ttl < 0:
            raise ConfigError("[backends.hindsight] timeout must be > 0 and health_ttl >= 0")
        if config.budget not in BUDGETS:
            raise ConfigError(f"[backends.hindsight] budget must be one of {', '.join(BUDGETS)}: {config.budget!r}")
        if not config.bank or not config.bank.replace("-", "").replace("_", "").isalnum():
            raise ConfigError(f"[backends.hindsight] bank must be letters, digits, '-' or '_': {config.bank!r}")
        HealthCheck.for_url(config.url)  # a URL it cannot probe is a ConfigError now, not at first use
        return config


_DEFAULTS = HindsightConfig()


class HindsightBackend(HealthChecked):
    """The ``hindsight`` backend: Hindsight's REST API, one request per call."""

    max_content: int | None = None

    def __init__(self, config: HindsightConfig) -> None:
        self.config = config
        self.name = config.name
        self._health = HealthCheck.for_url(config.url, ttl=config.health_ttl)
        self._bank_ready = False
        self.requests = 0
        """How many HTTP requests this backend made (for tests and benchmarks)."""

    @classmethod
    def from_config(cls, settings: Mapping[str, Any]) -> HindsightBackend:
        return cls(HindsightConfig.from_mapping(settings))

    # -- identity and health --------------------------------------------------
    @property
    def endpoint(self) -> str:
        return f"{self.config.url}/v1/default/banks/{self.config.bank}"

    # -- HTTP -----------------------------------------------------------------
    def _path(self, *parts: str) -> str:
        quoted = "/".join(urllib.parse.quote(part, safe="") for part in parts)
        return f"{self.endpoint}/{quoted}" if quoted else self.endpoint

    def request(self, method: str, url: str, body: Any = None, *, missing_ok: bool = False) -> Any:
        """One JSON request; the answer's JSON (None for a 404 when ``missing_ok``), or a memrouter error."""
        data = None if body is None else json.dumps(body).encode("utf-8")
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        if self.config.token:
            headers["Authorization"] = f"Bearer {self.config.token}"
        call = urllib.request.Request(url, data=data, method=method, headers=headers)
        self.requests += 1
        try:
            with urllib.request.urlopen(call, timeout=self.config.timeout) as answer:  # noqa: S310 - http(s) only
                raw = answer.read()
        except urllib.error.HTTPError as exc:
            detail = _detail(exc)
            exc.close()
            if exc.code == 404 and missing_ok:
                self._health.record_success()
                return None
            if exc.code == 404:
                self._health.record_success()
                raise NotFound(f"{self.name}: {method} {url}: 404 {detail}") from exc
            message = f"{self.name}: {method} {url}: HTTP {exc.code} {detail}"
            if exc.code in _UNAVAILABLE_STATUS:
                self._health.record_failure(message)
                raise BackendUnavailable(message) from exc
            self._health.record_success()
            if exc.code in (400, 413, 422):
                raise InvalidInput(message) from exc
            raise BackendContractError(message) from exc
        except OSError as exc:  # refused, reset, timed out (URLError and TimeoutError are OSErrors)
            reason = getattr(exc, "reason", exc)
            message = f"{self.name} at {self.config.url}: {type(reason).__name__}: {reason}"
            self._health.record_failure(message)
            raise BackendUnavailable(message) from exc
        self._health.record_success()
        try:
            return json.loads(raw) if raw else None
        except ValueError as exc:
            raise BackendContractError(f"{self.name}: {method} {url}: the answer is not JSON") from exc

    def _ensure_bank(self) -> None:
        if not self._bank_ready:
            self.request("PUT", self.endpoint, {"name": self.config.bank})
            self._bank_ready = True

    # -- the protocol -----------------------------------------------------------
    def search(self, query: str, limit: int = 10) -> list[ExternalHit]:
        if not query.strip() or limit < 1:
            return []
        body = {
            "query": query,
            "types": RECALL_TYPES,
            "budget": self.config.budget,
            "max_tokens": max(4096, TOKENS_PER_HIT * limit),
            "tag_groups": [{"not": {"tags": [OBSOLETE_TAG], "match": "any_strict"}}],
        }
        answer = self.request("POST", self._path("memories", "recall"), body, missing_ok=True)
        if answer is None:
            return []  # no bank yet: nothing retained
        results = answer.get("results") if isinstance(answer, dict) else None
        if not isinstance(results, list):
            raise BackendContractError(f"{self.name}: recall answered without a results list")
        best: dict[str, tuple[float, dict[str, Any]]] = {}
        for position, result in enumerate(results):
            if not isinstance(result, dict) or not isinstance(result.get("text"), str):
                continue
            document = result.get("document_id") or result.get("id")
            if not isinstance(document, str) or document in best:
                continue  # a later fact of a document already found
            if OBSOLETE_TAG in (result.get("tags") or []):
                continue
            best[document] = (_score(result, position), result)
        ranked = sorted(best.items(), key=lambda item: -item[1][0])[:limit]
        hits = []
        for rank, (document, (score, result)) in enumerate(ranked, start=1):
            metadata = result.get("metadata") or {}
            text = str(result["text"])
            hits.append(
                ExternalHit(backend=self.name, remote_id=document, title=_title(metadata, text), content=text,
                            score=score, rank=rank, hash=content_hash(text), tags=_list(metadata.get("tags")),
                            importance=_int(metadata.get("importance")), context=str(result.get("context") or ""),
                            source_repo=metadata.get("source_repo") or None)
            )  # fmt: skip
        return hits

    def upsert(self, draft: MemoryDraft, remote_id: str | None = None) -> str:
        document = remote_id or uuid.uuid4().hex
        metadata = {
            "title": draft.title, "content_hash": draft.hash, "importance": str(draft.importance),
            "tags": json.dumps(list(draft.tags)), "keywords": json.dumps(list(draft.keywords)),
            "source_repo": draft.source_repo or "", "source_files": json.dumps(list(draft.source_files)),
            "source_url": draft.source_url or "",
        }  # fmt: skip
        item: dict[str, Any] = {"content": draft.content, "document_id": document, "metadata": metadata}
        if draft.context:
            item["context"] = draft.context
        if draft.recorded_at:
            item["timestamp"] = draft.recorded_at
        self._ensure_bank()
        answer = self.request("POST", self._path("memories"), {"items": [item], "async": False})
        if not isinstance(answer, dict) or answer.get("success") is not True:
            raise BackendContractError(f"{self.name}: retain of {document} did not succeed: {answer!r}"[:500])
        return document

    def mark_obsolete(self, remote_id: str, reason: str, superseded_by: str | None = None) -> None:
        tags = [OBSOLETE_TAG, f"{REASON_PREFIX}{reason}"]
        if superseded_by:
            tags.append(f"{SUPERSEDED_PREFIX}{superseded_by}")
        self.request("PATCH", self._path("documents", remote_id), {"tags": tags})

    def get(self, remote_id: str) -> RemoteMemory:
        document = self.request("GET", self._path("documents", remote_id))
        if not isinstance(document, dict) or document.get("id") != remote_id:
            raise BackendContractError(f"{self.name}: document {remote_id} came back as {document!r}"[:500])
        metadata = document.get("document_metadata") or {}
        params = document.get("retain_params") or {}
        tags = [str(tag) for tag in document.get("tags") or []]
        text = str(document.get("original_text") or "")
        return RemoteMemory(
            id=remote_id, title=_title(metadata, text), content=text, context=str(params.get("context") or ""),
            tags=_list(metadata.get("tags")), keywords=_list(metadata.get("keywords")),
            importance=_int(metadata.get("importance")), is_obsolete=OBSOLETE_TAG in tags,
            obsolete_reason=_tagged(tags, REASON_PREFIX), superseded_by=_tagged(tags, SUPERSEDED_PREFIX),
            source_repo=metadata.get("source_repo") or None, source_files=_list(metadata.get("source_files")),
            source_url=metadata.get("source_url") or None,
            extra={"memory_unit_count": document.get("memory_unit_count"), "hindsight_tags": tags},
        )  # fmt: skip

    def inventory(self) -> dict[str, str]:
        held: dict[str, str] = {}
        offset = 0
        while True:
            query = urllib.parse.urlencode({"limit": PAGE, "offset": offset})
            page = self.request("GET", f"{self._path('documents')}?{query}", missing_ok=True)
            if page is None:
                return held  # no bank yet
            items = page.get("items") if isinstance(page, dict) else None
            if not isinstance(items, list):
                raise BackendContractError(f"{self.name}: the document list has no items")
            for item in items:
                if OBSOLETE_TAG in (item.get("tags") or []):
                    continue
                metadata = item.get("document_metadata") or {}
                held[str(item["id"])] = str(metadata.get("content_hash") or item.get("content_hash") or "")
            if len(items) < PAGE:
                return held
            offset += len(items)

    def close(self) -> None:
        """Nothing held between calls."""


def _detail(exc: urllib.error.HTTPError) -> str:
    try:
        body = json.loads(exc.read() or b"{}")
    except (ValueError, OSError):
        return str(exc.reason)
    detail = body.get("detail") if isinstance(body, dict) else None
    return str(detail if detail is not None else exc.reason)[:300]


def _score(result: Mapping[str, Any], position: int) -> float:
    scores = result.get("scores")
    final = scores.get("final") if isinstance(scores, dict) else None
    return float(final) if isinstance(final, int | float) else 1.0 / (position + 1)


def _title(metadata: Mapping[str, Any], text: str) -> str:
    title = metadata.get("title")
    if isinstance(title, str) and title:
        return title
    first = next((line.strip("# ").strip() for line in text.splitlines() if line.strip()), "")
    return first[:200]


def _list(value: Any) -> tuple[str, ...]:
    if isinstance(value, str) and value:
        try:
            value = json.loads(value)
        except ValueError:
            return (value,)
    return tuple(str(item) for item in value) if isinstance(value, list) else ()


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _tagged(tags: list[str], prefix: str) -> str | None:
    return next((tag[len(prefix) :] for tag in tags if tag.startswith(prefix)), None)
