"""Thin DVC stage entry points: fetch -> sweep -> report."""
