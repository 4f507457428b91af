"""The agent bench/replies.py dispatches (many at once): a protocol job built on
roost_agent.py that tells the bench when its `on_reply` was called.

    replies_agent.py REPORT_SOCKET

On each reply it first reads CLOCK_MONOTONIC (shared by every process on the machine, so
the bench compares it with its own `time.monotonic()`), then sends one datagram to
REPORT_SOCKET: `<seq> <monotonic seconds> <reply text>`; on each message another session
sends it (on_message), the same with the message's own text (its envelope's last line).
It reports "blocked / ready"
once and nothing after, so what the daemon does between replies is only the protocol's
own work (the ack). Run with `python -I -S`: standard library only, a small process.
"""

import os
import socket
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import roost_agent  # noqa: E402


def main(report_socket):
    out = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)

    def on_reply(reply):
        called = time.monotonic()
        out.sendto(("%d %r %s" % (reply.seq, called, reply.text)).encode("utf-8"), report_socket)

    def on_message(message):
        called = time.monotonic()
        text = message.text.rsplit("\n", 1)[-1]
        if text.startswith("> "):
            text = text[2:]             # the envelope quotes the sender's lines
        out.sendto(("%d %r %s" % (message.seq, called, text)).encode("utf-8"), report_socket)

    agent = roost_agent.RoostAgent.from_env("bench-replies", version="1", on_reply=on_reply,
                                            on_message=on_message)
    if agent is None:
        return 2
    agent.report("blocked", summary="ready")
    # It runs until roost stops the job (SIGHUP/SIGTERM end it), or refuses it.
    idle = threading.Event()
    while agent.refused is None:
        idle.wait(1.0)
    return 4


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
