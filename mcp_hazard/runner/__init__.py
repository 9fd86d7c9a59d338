"""Drive episodes: connect a client to an episode over a chosen transport, and run a set of episodes."""
