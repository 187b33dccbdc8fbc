"""The allocator settings a trial process starts with (rem.training.host_memory): in every Ray trial's environment, the
user's own values kept, and applied in a running process where the C library is glibc."""

from __future__ import annotations

import subprocess
import sys

from rem.training.host_memory import ALLOCATOR_ENV, allocator_env


def test_every_trial_process_starts_with_the_allocator_settings(monkeypatch):
    from pipeline.trial import worker_env

    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    env = worker_env()
    assert {k: env[k] for k in ALLOCATOR_ENV} == ALLOCATOR_ENV


def test_a_users_own_setting_wins(monkeypatch):
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert allocator_env()["MALLOC_ARENA_MAX"] == "4"


def test_a_running_process_applies_them_on_glibc():
    """In a fresh process (the settings are process-wide): glibc accepts every value."""
    code = "from rem.training.host_memory import keep_freed_memory; import platform; " \
           "print(keep_freed_memory(), platform.libc_ver()[0])"
    applied, libc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                   check=True).stdout.split()
    assert applied == ("True" if libc == "glibc" else "False")
