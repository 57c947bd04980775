"""One engine-client process and its end of the pipe: started, sent to, and told how it ended.

The process runs ``workbench.engine.client_process`` with the app's owner tag (``CLIENT_PARENT_ENV``),
so that it and its engine's processes are leftovers of the app if the app dies. It must be started
on a thread that outlives it (``PDEATHSIG`` is tied to the thread that started a process): the host
starts it from the thread that posts, the GUI thread.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from multiprocessing.connection import Connection

from workbench.engine.process_death import OomVerdict, OomWitness, ended
from workbench.engine.process_guard import CLIENT_PARENT_ENV

BACKEND_FACTORY = "workbench.bridge.backends:backend_for"


class ClientProcess:
    def __init__(self, check_with_scan: bool):
        ours, theirs = socket.socketpair()
        env = {**os.environ, CLIENT_PARENT_ENV: str(os.getpid())}
        args = [sys.executable, "-m", "workbench.engine.client_process", str(theirs.fileno()), BACKEND_FACTORY]
        if check_with_scan:
            args.append("--check-with-scan")
        self.process = subprocess.Popen(args, pass_fds=(theirs.fileno(),), env=env)
        theirs.close()
        self.conn = Connection(ours.detach())
        self.witness = OomWitness.now()  # the kernel's count of out-of-memory kills, to compare at its death
        self.send_lock = threading.Lock()
        self.asked_to_end = False
        # What a report of its death needs: the requests it holds, its latest start, its engine's processes.
        self.open: set[str] = set()
        self.start_id = 0
        self.engine_pids: tuple[int, ...] = ()

    @property
    def pid(self) -> int:
        return self.process.pid

    def running(self) -> bool:
        return self.process.poll() is None

    def send(self, command) -> bool:
        with self.send_lock:
            try:
                self.conn.send(command)
                return True
            except (OSError, ValueError):
                return False

    def how_it_ended(self, timeout_s: float = 5.0) -> str:
        """Its end in words: the signal that killed it and what is known of who sent it; "still running"
        only of a process that still runs after ``timeout_s``."""
        who = f"the engine client process (pid {self.pid})"
        try:
            code = self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return f"{who} is still running but stopped answering"
        return ended(who, code, self.witness.verdict([self.pid]) if code < 0 else OomVerdict("unknown"))
