"""Reading a TensorFlow checkpoint (``variables.index`` + ``variables.data-*``) without TensorFlow.

RLScheduler's trained models are TensorFlow 1.x ``simple_save`` directories. Their weights are in
a *tensor bundle*: ``variables.data-00000-of-00001`` holds the raw little-endian tensors back to
back, and ``variables.index`` is a LevelDB-format table (SSTable) mapping each variable's name to
a ``BundleEntryProto`` (dtype, shape, shard, offset, size). This reads the table's footer, its
index block and data blocks (uncompressed, as TensorFlow writes them), decodes the few protobuf
fields needed, and returns the float32 tensors by name. The formats are public (LevelDB's
``table_format.md``, TensorFlow's ``tensor_bundle.proto``); nothing of TensorFlow is used.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

__all__ = ["CheckpointError", "read_checkpoint"]

TABLE_MAGIC = 0xDB4775248B80FB57
FOOTER_SIZE = 48
BLOCK_TRAILER = 5  # compression type (1 byte) + crc32c (4)
DTYPES = {1: np.dtype("<f4"), 2: np.dtype("<f8"), 3: np.dtype("<i4"), 9: np.dtype("<i8")}


class CheckpointError(ValueError):
    """Not a tensor bundle this reader understands (one line)."""


def read_checkpoint(directory) -> dict[str, np.ndarray]:
    """The tensors of the bundle in ``directory`` (a ``variables`` folder, or a ``simple_save`` folder
    holding one), by variable name."""
    directory = Path(directory)
    if (directory / "variables").is_dir():
        directory = directory / "variables"
    index = directory / "variables.index"
    if not index.is_file():
        raise CheckpointError(f"{directory}: no variables.index (a TensorFlow checkpoint's variables folder)")
    entries = _table_entries(index.read_bytes(), str(index))
    shards: dict[int, bytes] = {}
    tensors = {}
    for name, value in entries:
        if not name:  # the bundle's header
            continue
        entry = _bundle_entry(value, name)
        dtype = DTYPES.get(entry.get("dtype"))
        if dtype is None:
            continue  # a type no scheduling network uses
        shard = entry.get("shard_id", 0)
        if shard not in shards:
            files = sorted(directory.glob(f"variables.data-{shard:05d}-of-*"))
            if not files:
                raise CheckpointError(f"{directory}: no data shard {shard} for {name}")
            shards[shard] = files[0].read_bytes()
        offset, size = entry.get("offset", 0), entry.get("size", 0)
        raw = shards[shard][offset:offset + size]
        if len(raw) != size:
            raise CheckpointError(f"{directory}: tensor {name} runs past the end of its data file")
        tensors[name] = np.frombuffer(raw, dtype).reshape(entry.get("shape", ())).copy()
    return tensors


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data):
            raise CheckpointError("truncated varint")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def _block(data: bytes, offset: int, size: int, name: str) -> list[tuple[bytes, bytes]]:
    """The (key, value) entries of one table block (keys are prefix-compressed)."""
    if offset + size + BLOCK_TRAILER > len(data):
        raise CheckpointError(f"{name}: a block runs past the end of the file")
    if data[offset + size] != 0:
        raise CheckpointError(f"{name}: compressed table blocks are not supported")
    block = data[offset:offset + size]
    nb_restarts = struct.unpack_from("<I", block, len(block) - 4)[0]
    end = len(block) - 4 - 4 * nb_restarts
    entries, key, at = [], b"", 0
    while at < end:
        shared, at = _varint(block, at)
        unshared, at = _varint(block, at)
        length, at = _varint(block, at)
        key = key[:shared] + block[at:at + unshared]
        at += unshared
        entries.append((key, block[at:at + length]))
        at += length
    return entries


def _table_entries(data: bytes, name: str) -> list[tuple[str, bytes]]:
    if len(data) < FOOTER_SIZE or struct.unpack_from("<Q", data, len(data) - 8)[0] != TABLE_MAGIC:
        raise CheckpointError(f"{name}: not a TensorFlow checkpoint index (no table footer)")
    footer = data[len(data) - FOOTER_SIZE:]
    _, at = _varint(footer, 0)  # the metaindex block's offset and size: unused
    _, at = _varint(footer, at)
    index_offset, at = _varint(footer, at)
    index_size, _ = _varint(footer, at)
    entries = []
    for _, handle in _block(data, index_offset, index_size, name):
        offset, at = _varint(handle, 0)
        size, _ = _varint(handle, at)
        entries.extend((key.decode("utf-8", "replace"), value) for key, value in _block(data, offset, size, name))
    return entries


def _bundle_entry(value: bytes, name: str) -> dict:
    """The fields of a ``BundleEntryProto``: dtype (1), shape (2), shard_id (3), offset (4), size (5)."""
    entry: dict = {}
    at = 0
    while at < len(value):
        tag, at = _varint(value, at)
        field, kind = tag >> 3, tag & 7
        if kind == 0:
            number, at = _varint(value, at)
            entry[{1: "dtype", 3: "shard_id", 4: "offset", 5: "size"}.get(field, field)] = number
        elif kind == 2:
            length, at = _varint(value, at)
            if field == 2:
                entry["shape"] = _shape(value[at:at + length])
            at += length
        elif kind == 5:
            at += 4
        elif kind == 1:
            at += 8
        else:
            raise CheckpointError(f"tensor {name}: unexpected protobuf wire type {kind}")
    return entry


def _shape(data: bytes) -> tuple:
    """A ``TensorShapeProto``: repeated dim (2) of {size (1)}."""
    dims, at = [], 0
    while at < len(data):
        tag, at = _varint(data, at)
        if tag >> 3 == 2 and tag & 7 == 2:
            length, at = _varint(data, at)
            dim, inner = 0, at
            while inner < at + length:
                t, inner = _varint(data, inner)
                number, inner = _varint(data, inner) if t & 7 == 0 else (0, inner)
                if t >> 3 == 1:
                    dim = number
            dims.append(dim)
            at += length
        else:
            raise CheckpointError("unexpected field in a tensor shape")
    return tuple(dims)
