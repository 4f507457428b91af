"""The blocking client of the daemon's socket that the CLI and the hub share. Standard
library only."""
