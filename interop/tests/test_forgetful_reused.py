"""The project's own sync, validate, hook and router-backend tests, run against the real Forgetful.

These tests were written against the fake server (``tests/sync``,
``tests/test_router_backends.py``); here the fixtures they ask for
(``fake_http``, ``fake``, ``inspector``) hand them the real Forgetful 0.6.0
instead, with embeddings from ``memrouter embed-serve``. Tests that steer the
fake's fault injection (``set_fault``) or start the fake themselves are not
imported; ``test_forgetful_faults.py`` covers faults with the real server.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import test_router_backends as router_backends
from interop_peers import RealForgetful
from sync import synchelp, test_sync_engine, test_sync_hook, test_sync_validate

from memrouter.external.backends.forgetful import ForgetfulBackend, ForgetfulConfig

# The real server embeds every memory through embed-serve: give calls more time than the fake needs.
synchelp.http_toml.__defaults__ = (30.0,)
router_backends.toml_for.__defaults__ = (30.0,)

project = test_sync_engine.project

test_sync_creates_once_then_skips_then_updates_changed = (
    test_sync_engine.test_sync_creates_once_then_skips_then_updates_changed
)
test_dry_run_says_what_would_happen_and_changes_nothing = (
    test_sync_engine.test_dry_run_says_what_would_happen_and_changes_nothing
)
test_long_memory_is_split_into_linked_parts_tracked_as_a_group = (
    test_sync_engine.test_long_memory_is_split_into_linked_parts_tracked_as_a_group
)
test_delete_marks_obsolete_with_the_reason = test_sync_engine.test_delete_marks_obsolete_with_the_reason
test_git_rename_moves_the_mapping_without_duplicates = (
    test_sync_engine.test_git_rename_moves_the_mapping_without_duplicates
)
test_rename_without_git_is_found_by_hash = test_sync_engine.test_rename_without_git_is_found_by_hash
test_crash_after_remote_create_before_state_write_converges = (
    test_sync_engine.test_crash_after_remote_create_before_state_write_converges
)
test_over_limit_fields_are_clipped_and_sync_succeeds = (
    test_sync_engine.test_over_limit_fields_are_clipped_and_sync_succeeds
)
test_a_deleted_index_adopts_the_remote_copies_instead_of_duplicating_them = (
    test_sync_engine.test_a_deleted_index_adopts_the_remote_copies_instead_of_duplicating_them
)
test_a_same_named_memory_of_another_project_is_never_adopted = (
    test_sync_engine.test_a_same_named_memory_of_another_project_is_never_adopted
)
test_report_counts_every_state_over_nested_folders = (
    test_sync_validate.test_report_counts_every_state_over_nested_folders
)
test_cli_validate_json_and_missing_backend_config = test_sync_validate.test_cli_validate_json_and_missing_backend_config
test_cli_hook_install_and_drain_queue = test_sync_hook.test_cli_hook_install_and_drain_queue
test_external_hits_are_appended_after_canonical_and_synced_copies_never_show_twice = (
    router_backends.test_external_hits_are_appended_after_canonical_and_synced_copies_never_show_twice
)
test_status_reports_each_backend = router_backends.test_status_reports_each_backend


@pytest.fixture(scope="module")
def fake_http(real_forgetful: RealForgetful) -> RealForgetful:
    """What the reused tests call the fake: the real server (they only read ``.url``)."""
    return real_forgetful


@pytest.fixture(scope="module")
def fake(real_forgetful: RealForgetful) -> RealForgetful:
    return real_forgetful


@pytest.fixture(scope="module")
def inspector(real_forgetful: RealForgetful) -> Iterator[ForgetfulBackend]:
    backend = ForgetfulBackend(ForgetfulConfig(url=real_forgetful.url, timeout=30.0))
    yield backend
    backend.close()
