"""Tests of the conversation store (orion_messages.store), on SQLite and a real PostgreSQL."""
