"""A TensorBoard event file of scalars, written without importing TensorBoard.

Importing ``torch.utils.tensorboard`` (protobuf descriptors, fsspec) takes about half a
second, a sixth of a whole quick-dev job; the few messages a scalar needs are
encoded here by hand instead. Format: TFRecord framing (length, masked CRC-32C of
the length, data, masked CRC-32C of the data) around ``tensorflow.Event`` protos.
"""

from __future__ import annotations

import os
import socket
import struct
import time
from pathlib import Path
from typing import BinaryIO


def _crc32c_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _masked_crc(data: bytes) -> int:
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _varint(value: int) -> bytes:
    out = bytearray()
    value &= (1 << 64) - 1  # int64 as protobuf encodes it
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _length_delimited(field: int, payload: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def _event(
    wall_time: float, step: int = 0, *, file_version: str = "", summary: bytes = b""
) -> bytes:
    data = b"\x09" + struct.pack("<d", wall_time)  # wall_time = 1 (double)
    if step:
        data += b"\x10" + _varint(step)  # step = 2 (int64)
    if file_version:
        data += _length_delimited(3, file_version.encode())
    if summary:
        data += _length_delimited(5, summary)
    return data


def scalar_event(tag: str, value: float, step: int, wall_time: float) -> bytes:
    # Summary { Value value = 1 { string tag = 1; float simple_value = 2; } }
    summary_value = _length_delimited(1, tag.encode()) + b"\x15" + struct.pack("<f", value)
    return _event(wall_time, step, summary=_length_delimited(1, summary_value))


def _record(data: bytes) -> bytes:
    header = struct.pack("<Q", len(data))
    return (
        header
        + struct.pack("<I", _masked_crc(header))
        + data
        + struct.pack("<I", _masked_crc(data))
    )


class ScalarEventFile:
    """Appends scalar events to one ``events.out.tfevents.*`` file in ``log_dir``."""

    def __init__(self, log_dir: Path, suffix: str = "") -> None:
        name = f"events.out.tfevents.{int(time.time())}.{socket.gethostname()}.{os.getpid()}"
        self.path = log_dir / (name + suffix)
        self._file: BinaryIO = self.path.open("wb")
        self._file.write(_record(_event(time.time(), file_version="brain.Event:2")))

    def add_scalar(self, tag: str, value: float, step: int, wall_time: float) -> None:
        self._file.write(_record(scalar_event(tag, value, step, wall_time)))

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()
