"""Gym 0.21's ``seeding.np_random(seed)``, reproduced with numpy and hashlib only.

RLScheduler draws its evaluation sequences with ``env.seed(1)``, i.e. gym 0.21's seeding: the seed's
decimal text is hashed with SHA-512, the first 8 bytes of the digest are read as an unsigned
little-endian integer (gym packs them as 32-bit words in the machine's byte order: little-endian
on every machine RLScheduler ran on), split into 32-bit words, least significant first (leading
zero words dropped), and a legacy ``numpy.random.RandomState`` is seeded with that list. Numpy
keeps the legacy generator's stream stable across versions, so the same starts come out without
gym (whose later versions changed ``np_random`` to a ``Generator``) -- the tests check the
published starts 1981, 2756, 4299, ...
"""

from __future__ import annotations

import hashlib

import numpy as np

__all__ = ["gym021_np_random", "seed_words"]

SEED_BYTES = 8  # gym's hash_seed(max_bytes=8)


def seed_words(seed: int) -> list[int]:
    """The 32-bit words gym 0.21 seeds its ``RandomState`` with for the integer ``seed``."""
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"the seed must be a non-negative integer, got {seed!r}")
    seed = int(seed) % 2 ** (8 * SEED_BYTES)  # gym's create_seed for integers
    digest = hashlib.sha512(str(seed).encode("utf8")).digest()
    value = int.from_bytes(digest[:SEED_BYTES], "little")
    if value == 0:
        return [0]
    words = []
    while value > 0:
        value, word = divmod(value, 2 ** 32)
        words.append(word)
    return words


def gym021_np_random(seed: int) -> np.random.RandomState:
    """The generator ``gym.utils.seeding.np_random(seed)[0]`` of gym 0.21 returns."""
    return np.random.RandomState(seed_words(seed))
