"""The machine's memory, as "auto" settings size themselves by it: a container's limit
wins over the host's memory, and the whole-table copy's share is split between the API
processes."""

from __future__ import annotations

import os

from citewell.config import Settings
from citewell.machine import memory_bytes, memory_free_bytes
from citewell.stores.registry import table_copy_budget_mb

GIB = 1 << 30
PHYSICAL = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def test_without_a_container_limit_the_physical_memory_counts(tmp_path):
    unlimited_v2 = tmp_path / "memory.max"
    unlimited_v2.write_text("max\n")
    unlimited_v1 = tmp_path / "memory.limit_in_bytes"
    unlimited_v1.write_text("9223372036854771712\n")  # what cgroup v1 says for "no limit"
    assert memory_bytes((tmp_path / "absent",)) == PHYSICAL
    assert memory_bytes((unlimited_v2,)) == PHYSICAL
    assert memory_bytes((unlimited_v1,)) == PHYSICAL


def test_a_containers_limit_is_what_the_server_may_use(tmp_path):
    limit = tmp_path / "memory.max"
    limit.write_text(f"{GIB}\n")
    assert memory_bytes((tmp_path / "absent", limit)) == min(GIB, PHYSICAL)


def test_auto_gives_a_fifth_of_the_memory_to_the_machines_copy():
    one = Settings.load(table_copy_mb="auto")
    assert table_copy_budget_mb(one, memory=24 * GIB) == 24 * 1024 // 5
    # Shared (the default), the machine holds one copy whatever the API processes.
    four = Settings.load(table_copy_mb="auto", workers=4)
    assert table_copy_budget_mb(four, memory=24 * GIB) == 24 * 1024 // 5
    # Each process with a copy of its own: the fifth is divided among them.
    own = Settings.load(table_copy_mb="auto", workers=4, table_copy_shared=False)
    assert table_copy_budget_mb(own, memory=24 * GIB) == 24 * 1024 // 5 // 4
    # A million 384-d chunks take about 3,300 MB: a 16 GB machine is just short of it.
    assert table_copy_budget_mb(one, memory=16 * GIB) == 3276
    assert table_copy_budget_mb(one) == memory_bytes() // 5 >> 20


def test_a_number_is_taken_as_it_is_and_zero_turns_copies_off():
    assert table_copy_budget_mb(Settings.load(table_copy_mb=700), memory=GIB) == 700
    assert table_copy_budget_mb(Settings.load(table_copy_mb=0), memory=64 * GIB) == 0


def test_free_memory_is_the_kernels_available_or_what_the_container_has_left(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal: 16384000 kB\nMemFree: 1000 kB\nMemAvailable: 8192000 kB\n")
    limit, usage = tmp_path / "memory.max", tmp_path / "memory.current"
    absent = (tmp_path / "absent",)
    assert memory_free_bytes(meminfo, absent, absent) == 8192000 * 1024
    limit.write_text(f"{4 * GIB}\n")
    usage.write_text(f"{3 * GIB}\n")
    assert memory_free_bytes(meminfo, (limit,), (usage,)) == GIB  # the container's room
    limit.write_text("max\n")  # no limit: the kernel's figure
    assert memory_free_bytes(meminfo, (limit,), (usage,)) == 8192000 * 1024
    assert memory_free_bytes(tmp_path / "absent", absent, absent) is None  # not Linux
    assert 0 < (memory_free_bytes() or 0) <= memory_bytes()  # this (Linux) machine's
