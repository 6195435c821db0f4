"""Telling a dead job holder on this host from a live one (jobs/holders.py)."""

import os
import socket
import subprocess

from citewell.jobs.holders import is_gone, this_process


def test_this_process_holds_its_jobs():
    assert this_process().startswith(f"{socket.gethostname()}/{os.getpid()}/")
    assert not is_gone(this_process())


def test_an_ended_process_on_this_host_holds_nothing():
    ended = subprocess.Popen(["true"])
    ended.wait()
    assert is_gone(f"{socket.gethostname()}/{ended.pid}/12345")


def test_a_reused_pid_is_not_the_same_holder():
    host, pid, started = this_process().split("/")
    assert started  # Linux: the start time is known
    assert is_gone(f"{host}/{pid}/{int(started) - 1}")


def test_another_hosts_process_is_left_to_its_lease():
    assert not is_gone("some-other-host/1/1")
    assert not is_gone("garbage")
