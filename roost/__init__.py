"""roost: run many coding agents on one machine, and keep them."""

__version__ = "0.1.0"
PROTOCOL_VERSION = 1
