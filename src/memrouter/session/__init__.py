"""Session memory: what the repository says right now (git) and what the agent is doing (task context)."""

from memrouter.session.git import GitError, GitSession
from memrouter.session.task import TaskContextStore

__all__ = ["GitError", "GitSession", "TaskContextStore"]
