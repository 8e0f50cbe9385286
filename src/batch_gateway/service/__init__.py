"""Use cases. Each takes its collaborators (a :class:`Services`) as an argument and reads no environment."""
