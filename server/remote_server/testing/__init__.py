"""Harnesses that run the server: live servers, processes, terminators, deviations."""
