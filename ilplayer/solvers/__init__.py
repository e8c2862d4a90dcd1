"""Backends that ship with the core distribution."""
