"""What roost ships inside itself and how the frozen program lives: its bundled files,
its unpacked copies, and the user's environment given back to what it starts."""
