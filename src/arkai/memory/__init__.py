"""Belief memory: episodes replayed in time order into beliefs (seed 002), deterministic."""
