"""The hub's own agent (M44, M45): its place in the daemon, the person's questions and
what it tells the user (desk), and the policy the daemon holds it to (policy)."""
