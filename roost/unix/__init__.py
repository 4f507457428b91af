"""Small seams over the operating system that the daemon and the keeper share: private
sockets, lock files, file descriptors. Standard library only."""
