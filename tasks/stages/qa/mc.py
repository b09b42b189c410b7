"""Multiple-choice layout: seeded shuffling and cyclic rotations, with the gold letter tracked.

The permutation comes straight from a SHA-256 of (run seed, edit id, question id), decoded as a
Lehmer code, so it is identical on every platform and Python version (``random.shuffle`` is
not guaranteed to be) and costs one hash per question.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from itertools import permutations
from math import factorial

LETTERS = "ABCDEFGH"


@dataclass(frozen=True)
class Layout:
    """One presentation of an MC question: options in order, the gold letter, the rotation index."""

    options: tuple[str, ...]
    gold: str
    rotation: int


def question_seed(run_seed: int, edit_id: str, qid: str) -> int:
    """A 64-bit per-question seed: same run seed + edit + qid -> same shuffle."""
    digest = hashlib.sha256(f"{run_seed}\x1f{edit_id}\x1f{qid}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def permutation(n: int, seed: int) -> list[int]:
    """The ``seed mod n!``-th permutation of ``range(n)`` (Lehmer-code decoding)."""
    k = seed % factorial(n)
    pool = list(range(n))
    out = []
    for i in range(n, 0, -1):
        f = factorial(i - 1)
        idx, k = divmod(k, f)
        out.append(pool.pop(idx))
    return out


def shuffled(options: list[str], correct: int, seed: int) -> Layout:
    """Options in a seeded order; ``correct`` is the index of the right option before shuffling."""
    order = permutation(len(options), seed)
    return Layout(tuple(options[i] for i in order), LETTERS[order.index(correct)], 0)


def rotations(layout: Layout) -> list[Layout]:
    """Every cyclic rotation of a layout (rotation r moves option i to slot (i - r) mod n).

    Scoring a model on all n rotations removes position bias (FREAK's cyclic evaluation).
    """
    n = len(layout.options)
    gold_idx = LETTERS.index(layout.gold)
    return [Layout(layout.options[r:] + layout.options[:r], LETTERS[(gold_idx - r) % n], r) for r in range(n)]


def fixed_orders(layout: Layout, fixed_slot: int) -> list[Layout]:
    """FREAK's cyclic scheme (App. C.1.2): the open option ("None of these") stays in its slot
    and the other options take every order (3! = 6 presentations for four options); the first
    is ``layout`` itself. Letters always run A, B, C, ... over the slots."""
    real = [i for i in range(len(layout.options)) if i != fixed_slot]
    gold_idx = LETTERS.index(layout.gold)
    out = []
    for r, order in enumerate(permutations(real)):
        slots = list(range(len(layout.options)))
        for slot, src in zip(real, order):
            slots[slot] = src
        out.append(Layout(tuple(layout.options[i] for i in slots), LETTERS[slots.index(gold_idx)], r))
    return out


def layouts(options: list[str], correct: int, seed: int, mode: str, fixed: int | None = None) -> list[Layout]:
    """The presentations to emit: one shuffled layout, or in ``cyclic`` mode FREAK's orders
    (``fixed``: index of the open option, kept where the shuffle put it) or, without an open
    option, every rotation (each option visits every slot once)."""
    base = shuffled(options, correct, seed)
    if mode == "cyclic":
        if fixed is not None:
            return fixed_orders(base, base.options.index(options[fixed]))
        return rotations(base)
    if mode != "shuffle":
        raise ValueError(f"qa.mc_mode must be 'shuffle' or 'cyclic', got {mode!r}")
    return [base]
