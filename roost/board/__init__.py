"""The shared task board (M47, M52): tasks any session may add, claim and finish, with
dependencies, projects by git repository, claims released when their session dies, and
counts pushed to the hubs. A task's own worktree and its stages (M54-M60) build on it."""
