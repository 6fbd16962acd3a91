"""The test suite of orion-messages."""
