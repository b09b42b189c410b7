"""Processes racing for one run directory's lease, for the lease tests and benchmarks/multinode.py.

Each racer is a real process (``python tests/lease_race.py``) that stays up across trials and
obeys one line at a time on stdin: ``go URL`` tries to take the lease of URL and answers
``won <pid> <lost>``, ``locked <holder pid> <lost>`` or ``error <message>`` (``lost``: the
conditional writes this racer lost to another, proof that the store, not timing, decided); ``release`` lets a held lease go
and answers ``released``. The parent sends ``go`` to every racer back to back, so all of them
reach the store within a millisecond or so of each other, and the winners keep the lease until
every answer is in: two ``won`` in one trial are two holders at the same time.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def racer() -> None:
    """The racer's loop (this file run as a script)."""
    from storage.fs import RunFS
    from storage.run_lock import RunLock, RunLocked

    held: RunLock | None = None
    print("ready", flush=True)
    for line in sys.stdin:
        cmd, _, arg = line.strip().partition(" ")
        if cmd == "go":
            lock = RunLock(RunFS.open(arg), f"racer {os.getpid()}", on_message=lambda m: None)
            try:
                lock.acquire()
                held = lock
                print(f"won {os.getpid()} {lock.contended}", flush=True)
            except RunLocked as exc:
                print(f"locked {exc.holder.pid if exc.holder else '?'} {lock.contended}", flush=True)
            except Exception as exc:  # noqa: BLE001 -- reported to the parent, which fails the trial
                print(f"error {type(exc).__name__}: {exc}".replace("\n", " "), flush=True)
        elif cmd == "release":
            if held is not None:
                held.release()
                held = None
            print("released", flush=True)


@dataclass
class RaceTally:
    """What a series of trials gave: every trial should have exactly one winner."""

    trials: int = 0
    double_wins: int = 0  # trials with two or more winners
    no_winner: int = 0
    errors: list[str] = field(default_factory=list)
    wrong_holder_named: int = 0  # a loser named someone other than the winner
    lost_writes: int = 0  # conditional writes refused by the store because another racer's came first
    acquire_s: list[float] = field(default_factory=list)  # wall time from "go" to the last answer

    def as_dict(self) -> dict[str, Any]:
        return {
            "trials": self.trials,
            "double_wins": self.double_wins,
            "no_winner": self.no_winner,
            "errors": self.errors[:5],
            "wrong_holder_named": self.wrong_holder_named,
        }

    def add(self, answers: list[str]) -> None:
        """Count one trial's answers."""
        self.trials += 1
        winners = [a.split()[1] for a in answers if a.startswith("won ")]
        self.double_wins += len(winners) > 1
        self.no_winner += not winners
        self.errors += [a for a in answers if a.startswith("error ")]
        named = {a.split()[1] for a in answers if a.startswith("locked ")}
        self.wrong_holder_named += bool(winners) and bool(named - set(winners))
        self.lost_writes += sum(int(a.split()[2]) for a in answers if a.startswith(("won ", "locked ")))


def plant_stale_lease(url: str) -> None:
    """A lease of a holder on another host that stopped beating ten minutes ago."""
    from storage.fs import RunFS
    from storage.run_lock import LEASE_FILE, Lease

    old = time.time() - 600
    RunFS.open(url).write_bytes_atomic(
        LEASE_FILE, Lease("reactbench build", "elsewhere", 4242, "s" * 32, old, old, 60.0).to_json()
    )


class Racers:
    """N racer processes (a context manager); ``race(url)`` runs one trial among all of them."""

    def __init__(self, n: int, env: dict[str, str] | None = None):
        self.n = n
        self.env = {**os.environ, **(env or {}), "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
        self.procs: list[subprocess.Popen[str]] = []

    def __enter__(self) -> Racers:
        for _ in range(self.n):
            self.procs.append(
                subprocess.Popen(
                    [sys.executable, str(Path(__file__))],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                    env=self.env,
                )
            )
        for proc in self.procs:
            assert self._answer(proc) == "ready"
        return self

    def __exit__(self, *exc: Any) -> None:
        for proc in self.procs:
            if proc.stdin is not None:
                proc.stdin.close()
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    @staticmethod
    def _answer(proc: subprocess.Popen[str]) -> str:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"racer {proc.pid} exited (status {proc.poll()})")
        return line.strip()

    def _say(self, text: str) -> list[str]:
        for proc in self.procs:  # all the lines first, then the answers: the racers start together
            assert proc.stdin is not None
            proc.stdin.write(text + "\n")
            proc.stdin.flush()
        return [self._answer(proc) for proc in self.procs]

    def race(self, url: str, tally: RaceTally) -> list[str]:
        """One trial on ``url``: every racer goes at once, then the winner(s) release."""
        started = time.perf_counter()
        answers = self._say(f"go {url}")
        tally.acquire_s.append(time.perf_counter() - started)
        tally.add(answers)
        self._say("release")
        return answers


if __name__ == "__main__":
    racer()
