"""`roost web`: the fleet from a browser or a phone (docs/web.md)."""
