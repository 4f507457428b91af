"""The keeper: the tiny process that holds every job's pty so no daemon restart loses
one, its socket's wire, and (client.py, the one module here that runs in the daemon)
the daemon's side of that socket. Standard library only, client.py excepted."""
