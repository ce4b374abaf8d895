"""Fair batching of embedding requests, for the embeddings endpoint.

Each request's texts wait in a queue of their own. One worker embeds them in
passes: a pass takes at most ``max_batch`` texts and ``max_batch_tokens``
tokens (a single text over the token budget goes alone), picking one text
from each waiting request in turn and starting each pass one request further
along. A large request is therefore split into many passes, and a small
request that arrives meanwhile rides in the next pass instead of waiting for
the large one to finish. When the worker is idle, the first request waits
``batch_window`` seconds for others, so requests that arrive close together
share one pass.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memrouter.embed import embed_many

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from memrouter.embed import Embedder

__all__ = ["FairBatcher"]


@dataclass(eq=False)
class _Job:
    """One request: its texts, their token counts, the rows embedded so far."""

    texts: list[str]
    tokens: list[int]
    future: asyncio.Future[NDArray[np.float32]]
    rows: NDArray[np.float32]
    next: int = 0
    done: int = 0

    @property
    def waiting(self) -> bool:
        return self.next < len(self.texts) and not self.future.done()


@dataclass(eq=False)
class FairBatcher:
    """Embeds the texts of concurrent requests in bounded passes, taking turns between requests.

    ``passes`` counts the embedding passes run so far, ``waiting`` the
    requests with texts not yet taken into a pass.
    """

    embedder: Embedder
    max_batch: int = 256
    max_batch_tokens: int = 4096
    batch_window: float = 0.005
    passes: int = 0
    _jobs: deque[_Job] = field(default_factory=deque)
    _arrived: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def waiting(self) -> int:
        """How many requests have texts that no pass has taken yet."""
        return sum(1 for job in self._jobs if job.waiting)

    async def embed(self, texts: list[str], tokens: list[int]) -> NDArray[np.float32]:
        """The vectors of ``texts`` (``tokens`` are their counts), once passes have covered them all."""
        import numpy as np

        rows = np.empty((len(texts), self.embedder.dimension), dtype=np.float32)
        if not texts:
            return rows
        future: asyncio.Future[NDArray[np.float32]] = asyncio.get_running_loop().create_future()
        self._jobs.append(_Job(texts, tokens, future, rows))
        self._arrived.set()
        return await future

    async def run(self) -> None:
        """Run passes until cancelled."""
        while True:
            if not any(job.waiting for job in self._jobs):
                self._jobs.clear()
                self._arrived.clear()
                await self._arrived.wait()
                await self._gather()
            await self._run_pass(self._next_pass())

    async def _gather(self) -> None:
        """Give requests arriving just after the first ``batch_window`` seconds to join its pass."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.batch_window
        while sum(len(job.texts) for job in self._jobs) < self.max_batch:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return
            self._arrived.clear()
            try:
                await asyncio.wait_for(self._arrived.wait(), remaining)
            except TimeoutError:
                return

    def _next_pass(self) -> list[tuple[_Job, int]]:
        """Pick the texts of the next pass: one per waiting request in turn, within both bounds."""
        for job in [job for job in self._jobs if not job.waiting]:
            self._jobs.remove(job)  # finished, failed or given up by its client
        picked: list[tuple[_Job, int]] = []
        budget = self.max_batch_tokens
        progress = True
        while progress and len(picked) < self.max_batch:
            progress = False
            for job in self._jobs:
                if len(picked) >= self.max_batch:
                    break
                if not job.waiting:
                    continue
                cost = job.tokens[job.next]
                if picked and cost > budget:
                    continue  # does not fit this pass; a shorter text of another request may
                picked.append((job, job.next))
                job.next += 1
                budget -= cost
                progress = True
        self._jobs.rotate(-1)  # the next pass starts with the next request
        return picked

    async def _run_pass(self, picked: list[tuple[_Job, int]]) -> None:

        if not picked:
            return
        texts = [job.texts[index] for job, index in picked]
        try:
            vectors = await asyncio.to_thread(embed_many, self.embedder, texts, batch_size=self.max_batch)
        except Exception as exc:  # the embedder failed: every request in this pass gets the error
            for job, _ in picked:
                if not job.future.done():
                    job.future.set_exception(exc)
            return
        self.passes += 1
        for (job, index), row in zip(picked, vectors, strict=True):
            job.rows[index] = row
            job.done += 1
            if job.done == len(job.texts) and not job.future.done():
                job.future.set_result(job.rows)
