"""Typed, frozen records built from server rows, and the snapshot that collects them."""
