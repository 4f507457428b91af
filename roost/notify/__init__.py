"""Notifications (issue 18): one per transition of a job into "needs you", to the sinks
roost.json names, with secrets masked before anything leaves the daemon."""
