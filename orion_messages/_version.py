"""The package's version, in its own module so any layer (the command line included) can read it."""

__version__ = "0.1.0"
"""The installed version of orion-messages (the one in the package metadata)."""
