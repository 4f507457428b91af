"""Sessions that talk to each other (M9, M43, M50): who may message whom and how they are
related (directory), messages and what they carry (messages, envelope), watches that
tell a session when another is idle or ended (watches)."""
