"""The hub: a full-screen terminal view of the fleet on the daemon's pushes (`roost hub`)."""
