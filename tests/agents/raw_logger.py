"""A TUI that logs every byte it reads, raw: its terminal in raw mode, each byte appended
to the file argv[1] as it comes. It prompts `> `, echoes what it reads as text, and on
Enter (CR) prints `got: LINE` and prompts again: a screen roost judges waiting for text.
"""

import os
import sys
import termios
import tty


def main():
    log_path = sys.argv[1]
    tty.setraw(0, termios.TCSANOW)
    line = bytearray()
    os.write(1, b"> ")
    with open(log_path, "ab", buffering=0) as log:
        while True:
            data = os.read(0, 1024)
            if not data:
                return 0
            log.write(data)
            for byte in data:
                if byte == 0x0d:
                    os.write(1, b"\r\ngot: " + bytes(line) + b"\r\n> ")
                    line.clear()
                elif byte >= 0x20 and byte != 0x7f:
                    line.append(byte)
                    os.write(1, bytes([byte]))


if __name__ == "__main__":
    sys.exit(main())
