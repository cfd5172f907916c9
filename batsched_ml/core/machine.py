"""Free cores of a homogeneous machine, as one int bitmask."""

from __future__ import annotations

from ..protocol.coreset import format_mask, lowest_bits


class MachineError(RuntimeError):
    """A decision would use a busy or unknown core."""


class Machine:
    __slots__ = ("nb_cores", "all_mask", "free_mask", "nb_free")

    def __init__(self, nb_cores: int):
        self.nb_cores = nb_cores
        self.all_mask = (1 << nb_cores) - 1
        self.free_mask = self.all_mask
        self.nb_free = nb_cores

    def lowest_free(self, count: int) -> int:
        """The ``count`` lowest-id free cores (batsched's first fit)."""
        return lowest_bits(self.free_mask, count)

    def allocate(self, mask: int) -> None:
        if mask & ~self.free_mask:
            raise MachineError(f"cores {format_mask(mask & ~self.free_mask)} are not free")
        self.free_mask &= ~mask
        self.nb_free -= mask.bit_count()

    def release(self, mask: int) -> None:
        if mask & self.free_mask:
            raise MachineError(f"cores {format_mask(mask & self.free_mask)} are already free")
        self.free_mask |= mask
        self.nb_free += mask.bit_count()
