"""Configuration: where the memories are, where the index goes, how search behaves.

Precedence, highest first: explicit arguments (``Config.load(root=...)``, the
CLI's ``--root``/``--index-dir``), then ``MEMROUTER_*`` environment variables
(``MEMROUTER_ROOT``, ``MEMROUTER_INDEX_DIR``, ``MEMROUTER_MODE``, ``MEMROUTER_DATABASE_URL``, ``MEMROUTER_PROJECT``,
``MEMROUTER_<BACKEND>_URL`` such as ``MEMROUTER_FORGETFUL_URL``, which
configures that backend over HTTP, replacing a configured ``command``), then the
project's ``memrouter.toml``, then the defaults below.

Finding the memories: walk up from the working directory to the first folder
holding ``.serena/memories`` (or, failing that, ``.git``); the memories root is
``<project>/.serena/memories`` and the index lives in ``<project>/.memrouter``.
A root given directly that is not a project's ``.serena/memories`` (or whose
project folder is not writable) gets a per-root index folder under the user
cache directory, so read-only folders can be searched too.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from memrouter.config import sections
from memrouter.config.sections import DEFAULT_GLOBS, AnchorsConfig, BranchesConfig, ContextConfig, JanitorConfig
from memrouter.core.errors import ConfigError
from memrouter.core.model import MODES
from memrouter.core.records import field, record, replace

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from typing import Any

    from memrouter.config.endpoints import EndpointConfig

__all__ = [
    "AnchorsConfig",
    "ContextConfig",
    "Config",
    "IndexConfig",
    "JanitorConfig",
    "SearchConfig",
    "find_project",
    "CONFIG_FILE",
    "STATE_DIR",
    "KNOWN_KEYS",
    "DEFAULT_GLOBS",
    "redacted_url",
]

CONFIG_FILE = "memrouter.toml"
STATE_DIR = ".memrouter"
MEMORIES = Path(".serena") / "memories"
RETRIEVERS = ("lexical", "dense", "graph")
EMBED_ON_SEARCH = 100_000  # characters: ``[embed] on_search``
# Every key memrouter.toml may hold, by section; ``status`` reports any other
# (a typo must not be silent). Backend sections are checked by their backend.
KNOWN_KEYS: dict[str, tuple[str, ...]] = {
    "": (
        "search",
        "embed",
        "rerank",
        "index",
        "scratch",
        "janitor",
        "context",
        "backends",
        "team",
        "anchors",
        "sources",
        "mcp",
        "branches",
    ),
    "search": (
        "mode",
        "limit",
        "rrf_k",
        "weights",
        "refresh_interval",
        "time_words",
        "recency",
        "fusion",
        "folder_context",
        "rerank",
    ),
    "search.weights": (*RETRIEVERS, "time"),
    "search.recency": ("long_term", "sprint"),
    "embed": ("model", "background", "on_search", "url", "dimension", "key_env", "batch_size", "timeout"),
    "rerank": ("url", "model", "key_env", "timeout"),
    "index": ("write_wait", "url", "project", "ef_search", "shared_vectors"),
    "scratch": ("ttl",),
    "janitor": ("decay", "stale_days", "workflow_idle_days", "unused_days"),
    "anchors": ("infer", "stale_share"),
    "context": ("margin",),
    "sources": ("globs",),
    "team": ("claude_flow",),
    "team.claude_flow": ("command", "cwd", "workflow", "timeout", "interval", "health_ttl"),
    "mcp": ("tools",),
    "branches": ("include", "share"),
}


@record
class SearchConfig:
    """Search defaults: mode, fusion weights, and how often to look for changed files."""

    mode: str = "hybrid"
    limit: int = 10
    rrf_k: int = 60
    # Tuned on LoCoMo-10 and the ai-agents golden set (benchmarks/): MiniLM is
    # weaker than BM25F on this data, so it breaks ties and lifts paraphrases
    # without pulling good lexical matches down. Raise "dense" for more of both.
    # "graph" (the knowledge-graph retriever, hybrid only) is 0, off: with MiniLM
    # it lowers MRR on the ai-agents golden set at every weight tried and finds
    # no more of its link-answered questions (benchmarks/bench_graph.py).
    weights: dict[str, float] = field(default_factory=lambda: {"lexical": 1.0, "dense": 0.1, "graph": 0.0})
    # A long-running process re-checks the files at most this often (seconds);
    # writes made through memrouter are visible at once regardless.
    refresh_interval: float = 1.0
    # A time phrase in a query ("last month"): "boost" memories active then, "filter" to them, or "off".
    time_words: str = "boost"
    # Recency decay per channel: a half-life in days (0 = off). Sprint notes age fast; long-term ones do not.
    recency: dict[str, float] = field(default_factory=lambda: {"long_term": 0.0, "sprint": 14.0})
    # "fixed": the weights above, always; "adaptive": the dense weight rises per query as the best lexical hit
    # covers less of the query (memrouter.index.search.dense_weight). Fixed is the default: adaptive does not
    # beat it on repositories its constants were not fitted on (benchmarks/fit_heldout.py, docs/search.md).
    fusion: str = "fixed"
    # Folders are context (memrouter.index.folders): a memory in a folder with an overview borrows this
    # share of the overview's score for each query word it lacks itself; 0 turns it off.
    folder_context: float = 0.9
    # A second stage reads the best fused candidates again, word piece by word piece (memrouter.index.sqlite.rerank);
    # it needs token vectors kept with the dense ones (the next `memrouter index` adds them).
    rerank: bool = False


TIME_WORDS = ("filter", "boost", "off")
FUSIONS = ("adaptive", "fixed")


@record
class IndexConfig:
    """How the index behaves among many processes."""

    # Seconds a write waits for other processes' writes before giving up (the
    # memory file is written regardless; the next refresh indexes it).
    write_wait: float = 30.0
    # A PostgreSQL database (``postgresql://...``) that holds this project's index for search and listing
    # (``memrouter.index.postgres.reader``); None: the local SQLite index alone.
    url: str | None = None
    # This repository's key in that database (``MEMROUTER_PROJECT``); None: derived from the git remote
    # (``memrouter.config.projectkey``), and refused when there is none.
    project: str | None = None
    # Candidates pgvector's HNSW search keeps per dense query in that database (``hnsw.ef_search``): more
    # finds more of the true nearest chunks in a large project, and takes longer (``bench_pg_scale.py``).
    ef_search: int = 500  # pgindex.connect.EF_SEARCH
    # Vectors are kept once for all worktrees of the repository, in ``<git common dir>/memrouter/vectors.sqlite``
    # (``memrouter.index.sqlite.shared_vectors``): a chunk another worktree embedded is read, not embedded again.
    shared_vectors: bool = True


@record
class Config:
    """Everything a Router needs, resolved to absolute paths."""

    root: Path
    index_dir: Path
    project_dir: Path | None = None
    search: SearchConfig = field(default_factory=SearchConfig)
    embedder: str = "minilm"
    backends: dict[str, dict[str, Any]] = field(default_factory=dict)
    source: str | None = None
    index: IndexConfig = field(default_factory=IndexConfig)
    unknown_keys: tuple[str, ...] = ()
    # Seconds a short-term scratchpad note lives (``[scratch] ttl``).
    scratch_ttl: float = 7200.0
    janitor: JanitorConfig = field(default_factory=JanitorConfig)
    context: ContextConfig = field(default_factory=ContextConfig)
    anchors: AnchorsConfig = field(default_factory=AnchorsConfig)
    # ``memrouter serve`` embeds memories lacking vectors in a background thread (``[embed] background``).
    embed_background: bool = True
    claude_flow: dict[str, Any] | None = None
    """``[team.claude_flow]`` as written; ``memrouter.team.bridge`` reads it."""
    # ``[sources] globs``: the repository's files read in place as read-only memories (``memrouter.store.sources``).
    sources: tuple[str, ...] = DEFAULT_GLOBS
    # The tools ``memrouter serve`` offers (``[mcp] tools``): profile and tool names, checked by
    # ``memrouter.mcp.profiles`` when a server is made.
    mcp_tools: tuple[str, ...] = ("core",)
    # A hybrid search embeds the memories lacking vectors first when their text is at most this many characters
    # (``[embed] on_search``; 0: never): a small project's first search is hybrid without `memrouter index`, a
    # large one runs keyword-only and says so. 100,000 characters take about ten seconds on two cores
    # (benchmarks/bench_first_search.py).
    embed_on_search: int = EMBED_ON_SEARCH
    # ``[embed] url``: the embedder is that endpoint (``embedder`` is then "openai"); ``[rerank] url``: the
    # second stage asks that endpoint (when ``[search] rerank`` is on).
    embed_endpoint: EndpointConfig | None = None
    rerank_endpoint: EndpointConfig | None = None
    branches: BranchesConfig = field(default_factory=BranchesConfig)  # ``[branches]``: other branches in search

    @property
    def embedder_options(self) -> dict[str, Any]:
        """What ``memrouter.embed.get_embedder(embedder, **options)`` takes for this configuration."""
        found = self.embed_endpoint
        if found is None:
            return {}
        return {
            "url": found.url, "model": found.model, "dimension": found.dimension, "key": found.key,
            "batch_size": found.batch_size, "timeout": found.timeout,
        }  # fmt: skip

    def summary(self) -> dict[str, Any]:
        """The settings in force, JSON-ready (for ``status``)."""
        return {
            "source": self.source,
            "mode": self.search.mode,
            "limit": self.search.limit,
            "rrf_k": self.search.rrf_k,
            "weights": dict(self.search.weights),
            "refresh_interval": self.search.refresh_interval,
            "time_words": self.search.time_words,
            "fusion": self.search.fusion,
            "folder_context": self.search.folder_context,
            "rerank": self.search.rerank,
            "recency": dict(self.search.recency),
            "embedder": self.embedder,
            "embed_endpoint": self.embed_endpoint.summary() if self.embed_endpoint else None,
            "rerank_endpoint": self.rerank_endpoint.summary() if self.rerank_endpoint else None,
            "embed_background": self.embed_background,
            "embed_on_search": self.embed_on_search,
            "write_wait": self.index.write_wait,
            "ef_search": self.index.ef_search,
            "database": redacted_url(self.index.url) if self.index.url else None,
            "project_key": self.project_key if self.index.url else self.index.project,
            "scratch_ttl": self.scratch_ttl,
            "janitor": {
                "decay": self.janitor.decay,
                "stale_days": self.janitor.stale_days,
                "workflow_idle_days": self.janitor.workflow_idle_days,
                "unused_days": self.janitor.unused_days,
            },
            "anchors": {"infer": self.anchors.infer, "stale_share": self.anchors.stale_share},
            "context": {"margin": self.context.margin},
            "sources": list(self.sources),
            "mcp_tools": list(self.mcp_tools),
            "branches": {"include": self.branches.include, "share": self.branches.share},
            "unknown_keys": list(self.unknown_keys),
        }

    @property
    def project_key(self) -> str:
        """This repository's key in a shared database: ``[index] project``, else its git remote, normalised
        (``memrouter.config.projectkey``); ``ConfigError`` when there is neither."""
        if self.index.project:
            return self.index.project
        from memrouter.config.projectkey import derived_key

        return derived_key(self.project_dir or self.root)

    @property
    def index_path(self) -> Path:
        return self.index_dir / "index.sqlite"

    @classmethod
    def load(
        cls,
        root: str | Path | None = None,
        index_dir: str | Path | None = None,
        *,
        cwd: str | Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> Config:
        """Resolve the configuration (see the module docstring for precedence)."""
        env = os.environ if env is None else env
        cwd = Path(cwd) if cwd is not None else Path.cwd()
        root = root or env.get("MEMROUTER_ROOT") or None
        index_dir = index_dir or env.get("MEMROUTER_INDEX_DIR") or None

        project: Path | None
        if root is not None:
            memories = Path(root).expanduser()
            memories = (cwd / memories).resolve() if not memories.is_absolute() else memories.resolve()
            if not memories.is_dir():
                raise ConfigError(f"memories root {memories} is not a folder")
            project = _project_of(memories)
        else:
            project = find_project(cwd)
            if project is None:
                raise ConfigError(
                    f"no project found from {cwd}: no folder above holds .serena/memories or .git "
                    "(use --root DIR to point at a memories folder)"
                )
            memories = project / MEMORIES

        settings, source = _read_toml(project / CONFIG_FILE if project else None)
        if index_dir is not None:
            state = Path(index_dir).expanduser()
            state = (cwd / state).resolve() if not state.is_absolute() else state
        elif project is not None and os.access(project, os.W_OK):
            state = project / STATE_DIR
        else:
            state = _cache_dir_for(memories)

        search = _search_config(settings.get("search", {}), env)
        backends = settings.get("backends", {})
        if not isinstance(backends, dict) or not all(isinstance(v, dict) for v in backends.values()):
            raise ConfigError(f"{source}: [backends.<name>] sections must be tables")
        backends = _backend_env(backends, env)
        embed = settings.get("embed", {})
        if not isinstance(embed, dict):
            raise ConfigError(f"{source}: [embed] must be a table")
        embedder = str(embed.get("model", "minilm"))
        embed_endpoint = _endpoint(embed, "embed", env) if "url" in embed else None
        if embed_endpoint is not None:
            embedder = "openai"
        else:
            stray = [key for key in ("dimension", "key_env", "batch_size", "timeout") if key in embed]
            if stray:
                raise ConfigError(f"{source}: [embed] {', '.join(stray)} need [embed] url (an embedding endpoint)")
        rerank = settings.get("rerank", {})
        if not isinstance(rerank, dict):
            raise ConfigError(f"{source}: [rerank] must be a table")
        if rerank and "url" not in rerank:
            raise ConfigError(f"{source}: [rerank] needs url (a /rerank endpoint)")
        rerank_endpoint = _endpoint(rerank, "rerank", env) if rerank else None
        background = embed.get("background", True)
        if not isinstance(background, bool):
            raise ConfigError(f"{source}: [embed] background must be true or false")
        on_search = embed.get("on_search", EMBED_ON_SEARCH)
        if isinstance(on_search, bool) or not isinstance(on_search, int) or on_search < 0:
            raise ConfigError(f"{source}: [embed] on_search must be a whole number of characters >= 0 (0: never)")
        index = _index_config(settings.get("index", {}), env)
        if index.url and not index.project:  # resolved once, and refused now rather than on the first search
            from memrouter.config.projectkey import derived_key

            index = replace(index, project=derived_key(project or memories))
        scratch_ttl = sections.scratch_ttl(settings.get("scratch", {}))
        team = settings.get("team", {})
        bridge = team.get("claude_flow") if isinstance(team, dict) else None
        if not isinstance(team, dict) or (bridge is not None and not isinstance(bridge, dict)):
            raise ConfigError(f"{source}: [team] and [team.claude_flow] must be tables")
        return cls(
            memories, state, project, search, embedder, backends, source, index, _unknown_keys(settings), scratch_ttl,
            sections.janitor_config(settings.get("janitor", {})), sections.context_config(settings.get("context", {})),
            sections.anchors_config(settings.get("anchors", {})), background, bridge, sections.sources(settings.get("sources", {})),
            sections.mcp_tools(settings.get("mcp", {})), on_search, embed_endpoint, rerank_endpoint,
            sections.branches_config(settings.get("branches", {})),
        )  # fmt: skip


def find_project(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` with ``.serena/memories``, else with ``.git``."""
    start = start.resolve()
    candidates = [start, *start.parents]
    for folder in candidates:
        if (folder / MEMORIES).is_dir():
            return folder
    for folder in candidates:
        if (folder / ".git").exists():
            return folder
    return None


def _project_of(memories: Path) -> Path | None:
    """The project folder when ``memories`` is a project's ``.serena/memories``."""
    if memories.name == "memories" and memories.parent.name == ".serena":
        return memories.parent.parent
    return None


def _cache_dir_for(memories: Path) -> Path:
    import hashlib  # lazy: loading OpenSSL costs a cold start tens of ms, and most roots are projects

    import platformdirs  # lazy: only a root outside a project needs the user cache

    digest = hashlib.sha256(str(memories).encode()).hexdigest()[:16]
    return Path(platformdirs.user_cache_dir("memrouter")) / "roots" / f"{memories.name}-{digest}"


def _read_toml(path: Path | None) -> tuple[dict[str, Any], str | None]:
    if path is None or not path.is_file():
        return {}, None
    import tomllib  # lazy: most projects have no configuration file

    try:
        with path.open("rb") as handle:
            return tomllib.load(handle), str(path)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from exc


def _search_config(section: Any, env: Mapping[str, str]) -> SearchConfig:
    if not isinstance(section, dict):
        raise ConfigError("[search] must be a table")
    defaults = SearchConfig()
    mode = str(env.get("MEMROUTER_MODE") or section.get("mode", defaults.mode))
    if mode not in MODES:
        raise ConfigError(f"search mode {mode!r} is not one of {', '.join(MODES)}")
    weights = _numbers(section, "weights", defaults.weights, "retriever = weight", "a number >= 0")
    try:
        limit = int(section.get("limit", defaults.limit))
        rrf_k = int(section.get("rrf_k", defaults.rrf_k))
        interval = float(section.get("refresh_interval", defaults.refresh_interval))
        folder_context = float(section.get("folder_context", defaults.folder_context))
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"[search]: {exc}") from exc
    if limit < 1 or rrf_k < 1 or interval < 0:
        raise ConfigError("[search] limit and rrf_k must be >= 1, refresh_interval >= 0")
    if not 0 <= folder_context <= 1:
        raise ConfigError(f"[search] folder_context must be between 0 and 1 (0: off), got {folder_context:g}")
    time_words = section.get("time_words", defaults.time_words)
    if time_words not in TIME_WORDS:
        raise ConfigError(f"[search] time_words {time_words!r} is not one of {', '.join(TIME_WORDS)}")
    recency = _numbers(
        section, "recency", defaults.recency, "channel = half-life in days", "a number of days >= 0 (0 turns decay off)"
    )
    fusion = section.get("fusion", defaults.fusion)
    if fusion not in FUSIONS:
        raise ConfigError(f"[search] fusion {fusion!r} is not one of {', '.join(FUSIONS)}")
    rerank = section.get("rerank", defaults.rerank)
    if not isinstance(rerank, bool):
        raise ConfigError(f"[search] rerank must be true or false, got {rerank!r}")
    return SearchConfig(mode, limit, rrf_k, weights, interval, time_words, recency, fusion, folder_context, rerank)


def _numbers(section: dict[str, Any], key: str, defaults: dict[str, float], shape: str, rule: str) -> dict[str, float]:
    """``[search.<key>]``: the defaults, overridden by a table of names to numbers >= 0."""
    table = dict(defaults)
    raw = section.get(key, {})
    if not isinstance(raw, dict):
        raise ConfigError(f"[search.{key}] must be a table of {shape}")
    for name, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ConfigError(f"[search.{key}] {name} must be {rule}")
        table[str(name)] = float(value)
    return table


def _index_config(section: Any, env: Mapping[str, str]) -> IndexConfig:
    if not isinstance(section, dict):
        raise ConfigError("[index] must be a table")
    url = env.get("MEMROUTER_DATABASE_URL") or section.get("url")
    if url is not None and (not isinstance(url, str) or not url.startswith(("postgresql://", "postgres://"))):
        raise ConfigError("[index] url must be a postgresql:// URL")
    project = env.get("MEMROUTER_PROJECT") or section.get("project")
    if project is not None and (not isinstance(project, str) or not 0 < len(project) <= 200):
        raise ConfigError("[index] project must be a name of 1 to 200 characters")
    try:
        wait = float(section.get("write_wait", IndexConfig().write_wait))
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"[index] write_wait: {exc}") from exc
    if not 0 < wait <= 3600:
        raise ConfigError("[index] write_wait must be between 0 and 3600 seconds")
    ef_search = section.get("ef_search", IndexConfig().ef_search)
    if isinstance(ef_search, bool) or not isinstance(ef_search, int) or not 1 <= ef_search <= 1000:
        raise ConfigError("[index] ef_search must be a whole number from 1 to 1000")
    shared = section.get("shared_vectors", True)
    if not isinstance(shared, bool):
        raise ConfigError("[index] shared_vectors must be true or false")
    return IndexConfig(wait, url, project, ef_search, shared)


def _unknown_keys(settings: dict[str, Any]) -> tuple[str, ...]:
    """Keys of memrouter.toml that no section knows, as dotted paths."""
    unknown: list[str] = []
    for section, known in KNOWN_KEYS.items():
        table: Any = settings
        for part in section.split(".") if section else ():
            table = table.get(part, {}) if isinstance(table, dict) else {}
        if isinstance(table, dict):
            unknown += [f"{section}.{key}" if section else key for key in table if key not in known]
    return tuple(sorted(unknown))


def _backend_env(backends: dict[str, dict[str, Any]], env: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """Apply ``MEMROUTER_<NAME>_URL`` (``MEMROUTER_FORGETFUL_URL``, ...) over the file's sections."""
    result = {name: dict(section) for name, section in backends.items()}
    for name in sorted({"forgetful", *result}):
        url = env.get(f"MEMROUTER_{name.upper().replace('-', '_')}_URL")
        if url:
            section = result.setdefault(name, {})
            section.pop("command", None)
            section["url"] = url
    return result


def _endpoint(section: dict[str, Any], name: str, env: Mapping[str, str]) -> EndpointConfig:
    """``[embed]`` or ``[rerank]`` with a url (``memrouter.config.endpoints``, loaded only then)."""
    from memrouter.config.endpoints import endpoint_config

    return endpoint_config(section, name, env)


def redacted_url(url: str) -> str:
    """``url`` without its password (``memrouter.config.endpoints.redacted_url``)."""
    from memrouter.config.endpoints import redacted_url as redacted

    return redacted(url)
