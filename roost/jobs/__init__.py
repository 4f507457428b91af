"""Jobs: their records and rows, starting and stopping them through the keeper, their
replies (typed or delivered), idle reaping, profiles and launches."""
