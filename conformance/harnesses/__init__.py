"""Harnesses: adapters between the protocol (stdin/stdout JSON lines) and an implementation."""
