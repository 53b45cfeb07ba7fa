"""The warm process's messages: each type crosses the socket as itself, with its file
descriptors; anything else is refused as no message (never half-read as a dict)."""

from __future__ import annotations

import os

import pytest
from quickdev.warm import protocol

MESSAGES: list[protocol.Message] = [
    protocol.Preload([("torch", []), ("transformers", ["Trainer"])], ["/home/me/project"]),
    protocol.Fork(3, ["run", "train.py", "--", "--lr", "0.1"], "/home/me", {"A": "1"}),
    protocol.Ready(["torch"], {"mylib": "not found"}, None, None, 312.5, {"/site-packages": 7}),
    protocol.Forked(3, 4242),
    protocol.Refused(4, "importing threadlib started a Python thread (2 running)"),
    protocol.Exited(4242, -9),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: type(m).__name__)
def test_each_message_arrives_as_the_type_that_was_sent(message: protocol.Message) -> None:
    ours, theirs = protocol.pair()
    with ours, theirs:
        protocol.send(ours, message)
        received = protocol.receive(theirs)
    assert received == (message, [])


def test_descriptors_travel_beside_a_fork() -> None:
    read_end, write_end = os.pipe()
    ours, theirs = protocol.pair()
    with ours, theirs:
        protocol.send(ours, MESSAGES[1], [write_end])
        received = protocol.receive(theirs)
    assert received is not None
    message, (fd,) = received
    assert message == MESSAGES[1]
    os.write(fd, b"job output")
    assert os.read(read_end, 100) == b"job output"
    for end in (fd, read_end, write_end):
        os.close(end)


@pytest.mark.parametrize(
    ("data", "expected"),
    [(b'{"op": "shutdown"}', "not a warm-process message"), (b'{"op": "forked"}', "malformed")],
)
def test_anything_else_is_refused_by_name(data: bytes, expected: str) -> None:
    ours, theirs = protocol.pair()
    with ours, theirs:
        ours.send(data)
        with pytest.raises(ValueError, match=expected):
            protocol.receive(theirs)
