"""An agent that fails as soon as it starts: prints a line and exits with status 3."""

import sys

print("dying", flush=True)
sys.exit(3)
