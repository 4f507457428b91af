"""The daemon's composition: the home checked and locked, gevent patched, the services
built in dependency order, the server run. Nothing below imports this package."""
