"""Sessions on a clock (M39, M40): the vocabulary of when (when), the schedules as kept
(book) and the one timer that runs them (clock)."""
