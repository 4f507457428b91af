"""The event bus and the feed of what happened (M43): every change the feed lists is
published once, where it happens; the feed keeps the last 1000 on disk, and the bus's
listeners (subscribed hubs, watches) hear each once it is durable, in seq order."""
