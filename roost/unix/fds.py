"""File descriptors: what a read buffer holds, asked without waiting on it."""

import fcntl
import struct
import termios


def bytes_ready(fd):
    """What an fd's read buffer holds, a pty's or a socket's (FIONREAD answers without
    waiting on it)."""
    return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]
